// listener.http2: defaults, the keys, their bounds, and its tie to listener.tls.alpn.
#include <gtest/gtest.h>

#include "tests/config/config_test_util.h"

namespace ferry::config {
namespace {

TEST(ListenerHttp2ConfigTest, DefaultsOfferHttp2) {
  FerryConfig c = configOf("instance_name: a\n");
  EXPECT_TRUE(c.listener.http2.enabled);
  EXPECT_EQ(c.listener.http2.max_concurrent_streams, 256u);
  EXPECT_EQ(c.listener.http2.initial_stream_window_bytes, 65536u);
  EXPECT_EQ(c.listener.tls.alpn, (std::vector<std::string>{"h2", "http/1.1"}));
}

TEST(ListenerHttp2ConfigTest, KeysAreRead) {
  FerryConfig c = configOf(
      "instance_name: a\nlistener:\n  port: 10001\n  http2:\n    max_concurrent_streams: 1000\n"
      "    initial_stream_window_bytes: 1048576\n");
  EXPECT_EQ(c.listener.port, 10001);
  EXPECT_TRUE(c.listener.http2.enabled);
  EXPECT_EQ(c.listener.http2.max_concurrent_streams, 1000u);
  EXPECT_EQ(c.listener.http2.initial_stream_window_bytes, 1048576u);
}

TEST(ListenerHttp2ConfigTest, DisabledLeavesH2OutOfTheDefaultAlpn) {
  FerryConfig c = configOf("instance_name: a\nlistener: {http2: {enabled: false}}\n");
  EXPECT_FALSE(c.listener.http2.enabled);
  EXPECT_EQ(c.listener.tls.alpn, (std::vector<std::string>{"http/1.1"}));
}

TEST(ListenerHttp2ConfigTest, ErrorsNameTheKey) {
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {http2: {max_concurrent_streams: 0}}\n",
                   "listener.http2.max_concurrent_streams:");
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {http2: {initial_stream_window_bytes: 100}}\n",
                   "listener.http2.initial_stream_window_bytes:");
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {http2: {enabled: perhaps}}\n",
                   "listener.http2.enabled: must be true or false");
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {http2: {push: true}}\n",
                   "listener.http2.push: unknown key");
}

}  // namespace
}  // namespace ferry::config
