// forwarding.owner_protocol and forwarding.owner_http2: defaults, the keys, their bounds.
#include <gtest/gtest.h>

#include "tests/config/config_test_util.h"

namespace ferry::config {
namespace {

TEST(OwnerProtocolConfigTest, DefaultsAreAutoWithACapOf1000) {
  FerryConfig c = configOf("instance_name: a\n");
  EXPECT_EQ(c.forwarding.owner_protocol, OwnerProtocol::Auto);
  EXPECT_EQ(c.forwarding.owner_http2.max_streams_per_connection, 1000u);
  EXPECT_EQ(c.forwarding.owner_http2.ping_interval, Millis{10'000});
  EXPECT_EQ(c.forwarding.owner_http2.ping_timeout, Millis{5'000});
}

TEST(OwnerProtocolConfigTest, KeysAreRead) {
  FerryConfig c = configOf(
      "instance_name: a\nforwarding:\n  owner_protocol: h2\n  owner_http2:\n"
      "    max_streams_per_connection: 10\n    ping_interval: 2s\n    ping_timeout: 300ms\n");
  EXPECT_EQ(c.forwarding.owner_protocol, OwnerProtocol::H2);
  EXPECT_EQ(c.forwarding.owner_http2.max_streams_per_connection, 10u);
  EXPECT_EQ(c.forwarding.owner_http2.ping_interval, Millis{2'000});
  EXPECT_EQ(c.forwarding.owner_http2.ping_timeout, Millis{300});
  EXPECT_EQ(
      configOf("instance_name: a\nforwarding: {owner_protocol: http1}\n").forwarding.owner_protocol,
      OwnerProtocol::Http1);
  EXPECT_EQ(
      configOf("instance_name: a\nforwarding: {owner_protocol: auto}\n").forwarding.owner_protocol,
      OwnerProtocol::Auto);
}

TEST(OwnerProtocolConfigTest, ErrorsNameTheKey) {
  EXPECT_ONE_ERROR("instance_name: a\nforwarding: {owner_protocol: h3}\n",
                   "forwarding.owner_protocol: must be one of auto, h2, http1");
  EXPECT_ONE_ERROR("instance_name: a\nforwarding: {owner_protocol: [h2]}\n",
                   "forwarding.owner_protocol:");
  EXPECT_ONE_ERROR("instance_name: a\nforwarding: {owner_http2: {max_streams_per_connection: 0}}\n",
                   "forwarding.owner_http2.max_streams_per_connection:");
  EXPECT_ONE_ERROR("instance_name: a\nforwarding: {owner_http2: {ping_interval: 1ms}}\n",
                   "forwarding.owner_http2.ping_interval:");
  EXPECT_ONE_ERROR("instance_name: a\nforwarding: {owner_http2: {ping_timeout: soon}}\n",
                   "forwarding.owner_http2.ping_timeout:");
  EXPECT_ONE_ERROR("instance_name: a\nforwarding: {owner_http2: {window: 1}}\n",
                   "forwarding.owner_http2.window: unknown key");
}

}  // namespace
}  // namespace ferry::config
