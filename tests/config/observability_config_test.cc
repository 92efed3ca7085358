// access_log (both forms), forwarded_headers and listener.reuse_port.
#include <gtest/gtest.h>

#include "tests/config/config_test_util.h"

namespace ferry::config {
namespace {

TEST(ObservabilityConfigTest, AccessLogTakesAPathOrAMapping) {
  FerryConfig c = configOf("instance_name: a\naccess_log: /var/log/ferry.log\n");
  EXPECT_EQ(c.access_log, "/var/log/ferry.log");
  EXPECT_EQ(c.access_log_format, "json");  // the default
  c = configOf("instance_name: a\naccess_log: {path: \"-\", format: text}\n");
  EXPECT_EQ(c.access_log, "-");
  EXPECT_EQ(c.access_log_format, "text");
  c = configOf("instance_name: a\naccess_log: {path: /x.log}\n");
  EXPECT_EQ(c.access_log_format, "json");
}

TEST(ObservabilityConfigTest, AccessLogErrorsNameTheKey) {
  EXPECT_ONE_ERROR("instance_name: a\naccess_log: {path: /x, format: xml}\n",
                   "access_log.format: must be json or text (got \"xml\")");
  EXPECT_ONE_ERROR("instance_name: a\naccess_log: {format: json}\n", "access_log.path: required");
  EXPECT_ONE_ERROR("instance_name: a\naccess_log: {path: /x, colour: red}\n",
                   "access_log.colour: unknown key");
}

TEST(ObservabilityConfigTest, ForwardedHeaders) {
  FerryConfig c = configOf("instance_name: a\n");
  EXPECT_TRUE(c.forwarded_headers.x_forwarded);
  EXPECT_EQ(c.forwarded_headers.trusted_hops, 0u);
  c = configOf("instance_name: a\nforwarded_headers: {x_forwarded: false, trusted_hops: 2}\n");
  EXPECT_FALSE(c.forwarded_headers.x_forwarded);
  EXPECT_EQ(c.forwarded_headers.trusted_hops, 2u);
  EXPECT_ONE_ERROR("instance_name: a\nforwarded_headers: {trusted_hops: 99}\n",
                   "forwarded_headers.trusted_hops:");
}

TEST(ObservabilityConfigTest, ListenerReusePort) {
  EXPECT_FALSE(configOf("instance_name: a\n").listener.reuse_port);
  FerryConfig c = configOf("instance_name: a\nlistener: {port: 10001, reuse_port: true}\n");
  EXPECT_TRUE(c.listener.reuse_port);
  EXPECT_EQ(c.listener.port, 10001);
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {reuse_port: maybe}\n",
                   "listener.reuse_port: must be true or false");
}

TEST(ObservabilityConfigTest, BatchedWrites) {
  EXPECT_TRUE(configOf("instance_name: a\n").batched_writes);
  EXPECT_FALSE(configOf("instance_name: a\nbatched_writes: false\n").batched_writes);
  EXPECT_ONE_ERROR("instance_name: a\nbatched_writes: sometimes\n",
                   "batched_writes: must be true or false");
}

}  // namespace
}  // namespace ferry::config
