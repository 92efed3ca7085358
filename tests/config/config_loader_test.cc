#include "config/config_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "tests/config/config_test_util.h"

namespace ferry::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

TEST(ConfigLoaderTest, MinimalConfigHasTheDocumentedDefaults) {
  const FerryConfig c = configOf("instance_name: inst-1\n");
  const FerryConfig d;
  EXPECT_EQ(c.instance_name, "inst-1");
  EXPECT_EQ(c.listener.host, "127.0.0.1");
  EXPECT_EQ(c.listener.port, 10000);
  EXPECT_EQ(c.local_instance.host, "127.0.0.1");
  EXPECT_EQ(c.local_instance.port, 8080);
  EXPECT_EQ(c.admin.host, "127.0.0.1");
  EXPECT_EQ(c.admin.port, 9901);
  EXPECT_EQ(c.workers, 0u);
  EXPECT_EQ(c.limits.max_request_header_bytes, 60u * 1024);
  EXPECT_EQ(c.limits.max_request_headers, 100u);
  EXPECT_EQ(c.limits.max_connections, 10000u);
  EXPECT_EQ(c.limits.replay_buffer_bytes, 64u * 1024);
  EXPECT_EQ(c.limits.buffer_high_watermark_bytes, 1024u * 1024);
  EXPECT_EQ(c.limits.max_pending_upstream_requests, 1024u);
  EXPECT_EQ(c.limits.max_active_requests_per_connection, 100u);
  EXPECT_EQ(c.limits.max_connections_per_client_address, 0u);
  EXPECT_EQ(c.timeouts.request_body_idle, Millis(15'000));
  EXPECT_EQ(c.timeouts.request_head, Millis(10'000));
  EXPECT_EQ(c.timeouts.keepalive_idle, Millis(60'000));
  EXPECT_EQ(c.timeouts.upstream_connect, Millis(2'000));
  EXPECT_EQ(c.timeouts.upstream_idle, Millis(4'000));
  EXPECT_EQ(c.timeouts.stream_idle, Millis(300'000));
  EXPECT_EQ(c.timeouts.response, Millis(0));
  EXPECT_EQ(c.timeouts.response_head, Millis(15'000));
  // Kubernetes' default grace period is 30 s: drain_delay + drain stays under it.
  EXPECT_EQ(c.timeouts.drain_delay, Millis(0));
  EXPECT_EQ(c.timeouts.drain, Millis(25'000));
  EXPECT_FALSE(c.local_instance.readiness.enabled);
  EXPECT_EQ(c.upstream.max_connections, 256u);
  EXPECT_TRUE(c.forwarding.enabled);
  EXPECT_EQ(c.forwarding.fleet_file, "");
  EXPECT_TRUE(c.forwarding.peers.empty());
  EXPECT_FALSE(c.forwarding.allow_http_peers);
  EXPECT_TRUE(c.forwarding.peer_domains.empty());
  EXPECT_EQ(c.forwarding.routes, (std::vector<std::string>{"/v1/stream/", "/v1/streams/"}));
  EXPECT_EQ(c.forwarding.watch_interval, Millis(1000));
  EXPECT_EQ(c.access_log, "");
  EXPECT_EQ(c.forwarding.routes, d.forwarding.routes);
}

TEST(ConfigLoaderTest, EmptySectionsKeepDefaults) {
  const FerryConfig c =
      configOf("instance_name: a\nlistener:\nlimits: {}\ntimeouts: ~\nforwarding:\nupstream: {}\n");
  EXPECT_EQ(c.listener.port, 10000);
  EXPECT_EQ(c.limits.max_connections, 10000u);
  EXPECT_TRUE(c.forwarding.enabled);
}

TEST(ConfigLoaderTest, ReadsEveryKey) {
  const FerryConfig c = configOf(R"(
instance_name: streams-2
listener: {address: "::", port: 0}
local_instance: {address: localhost, port: 18080}
admin: {address: ::1, port: 0}
workers: 64
limits:
  max_request_header_bytes: 1024
  max_request_headers: 7
  max_connections: 5
  replay_buffer_bytes: 0
  buffer_high_watermark_bytes: 16384
  max_pending_upstream_requests: 0
  max_active_requests_per_connection: 3
  max_connections_per_client_address: 9
timeouts:
  request_head: 500ms
  keepalive_idle: 10s
  upstream_connect: 2m
  upstream_idle: 1h
  stream_idle: 1500
  request_body_idle: 0
  response: 0
  response_head: 0
  drain: 0s
upstream: {max_connections: 1}
forwarding:
  enabled: false
  peers: {streams-1: "http://127.0.0.1:8081"}
  allow_http_peers: true
  peer_domains: [127.0.0.1]
  routes: [/a/, /b]
  watch_interval: 100ms
access_log: /tmp/ferry.log
)");
  EXPECT_EQ(c.instance_name, "streams-2");
  EXPECT_EQ(c.listener.host, "::");
  EXPECT_EQ(c.listener.port, 0);
  EXPECT_EQ(c.local_instance.host, "localhost");
  EXPECT_EQ(c.local_instance.port, 18080);
  EXPECT_EQ(c.admin.host, "::1");
  EXPECT_EQ(c.admin.port, 0);
  EXPECT_EQ(c.workers, 64u);
  EXPECT_EQ(c.limits.max_request_header_bytes, 1024u);
  EXPECT_EQ(c.limits.max_request_headers, 7u);
  EXPECT_EQ(c.limits.max_connections, 5u);
  EXPECT_EQ(c.limits.replay_buffer_bytes, 0u);
  EXPECT_EQ(c.limits.buffer_high_watermark_bytes, 16384u);
  EXPECT_EQ(c.limits.max_pending_upstream_requests, 0u);
  EXPECT_EQ(c.limits.max_active_requests_per_connection, 3u);
  EXPECT_EQ(c.limits.max_connections_per_client_address, 9u);
  EXPECT_EQ(c.timeouts.request_body_idle, Millis(0));
  EXPECT_EQ(c.timeouts.request_head, Millis(500));
  EXPECT_EQ(c.timeouts.keepalive_idle, Millis(10'000));
  EXPECT_EQ(c.timeouts.upstream_connect, Millis(120'000));
  EXPECT_EQ(c.timeouts.upstream_idle, Millis(3'600'000));
  EXPECT_EQ(c.timeouts.stream_idle, Millis(1500));
  EXPECT_EQ(c.timeouts.response, Millis(0));
  EXPECT_EQ(c.timeouts.response_head, Millis(0));
  EXPECT_EQ(c.timeouts.drain, Millis(0));
  EXPECT_EQ(c.upstream.max_connections, 1u);
  EXPECT_FALSE(c.forwarding.enabled);
  EXPECT_EQ(c.forwarding.peers,
            (std::map<std::string, std::string>{{"streams-1", "http://127.0.0.1:8081"}}));
  EXPECT_TRUE(c.forwarding.allow_http_peers);
  EXPECT_EQ(c.forwarding.peer_domains, std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(c.forwarding.routes, (std::vector<std::string>{"/a/", "/b"}));
  EXPECT_EQ(c.forwarding.watch_interval, Millis(100));
  EXPECT_EQ(c.access_log, "/tmp/ferry.log");
}

TEST(ConfigLoaderTest, InstanceNameIsRequiredAndAToken) {
  EXPECT_ONE_ERROR("workers: 1\n", "instance_name: required");
  EXPECT_ONE_ERROR("", "instance_name: required");
  EXPECT_ONE_ERROR("# only a comment\n", "instance_name: required");
  EXPECT_ONE_ERROR(
      "instance_name: a b\n",
      "instance_name: must be a token (RFC 9110 tchar), 1..128 characters (got \"a b\")");
  EXPECT_ONE_ERROR("instance_name: \"\"\n", "instance_name: must be a token");
  EXPECT_ONE_ERROR("instance_name: a/b\n", "instance_name: must be a token");
  EXPECT_ONE_ERROR("instance_name: " + std::string(129, 'x') + "\n",
                   "instance_name: must be a token");
  EXPECT_ONE_ERROR("instance_name: [a]\n", "instance_name: must be a string (got a list)");
  EXPECT_ONE_ERROR("instance_name:\n", "instance_name: must be a string (got null)");
  EXPECT_EQ(configOf("instance_name: " + std::string(128, 'x')).instance_name.size(), 128u);
}

TEST(ConfigLoaderTest, DocumentErrors) {
  EXPECT_ONE_ERROR("just a string\n", "the document must be a mapping");
  EXPECT_ONE_ERROR("- a\n- b\n", "the document must be a mapping (got a list)");
  const LoadResult bad = app::loadConfigString("instance_name: a\nlistener: {port: 1\n");
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0].path, "");
  EXPECT_THAT(bad.errors[0].message, StartsWith("invalid YAML at line "));
  EXPECT_EQ(bad.errors[0].toString(), bad.errors[0].message);
  EXPECT_FALSE(bad.config.has_value());
  EXPECT_THAT(errorsOf("instance_name: a\n  bad: indent\n"),
              ElementsAre(StartsWith("invalid YAML at line 2")));
}

TEST(ConfigLoaderTest, ConfigErrorToString) {
  EXPECT_EQ((ConfigError{"listener.port", "bad"}).toString(), "listener.port: bad");
  EXPECT_EQ((ConfigError{"", "bad"}).toString(), "bad");
}

TEST(ConfigLoaderTest, Ports) {
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {port: 70000}\n",
                   "listener.port: must be an integer 0..65535 (got \"70000\")");
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {port: -1}\n",
                   "listener.port: must be an integer 0..65535");
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {port: http}\n",
                   "listener.port: must be an integer 0..65535");
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {port: \"10000\"}\n",
                   "listener.port: must be an integer 0..65535");  // a quoted value is a string
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {port: 1.5}\n",
                   "listener.port: must be an integer 0..65535");
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {port: [1]}\n",
                   "listener.port: must be an integer 0..65535 (got a list)");
  EXPECT_ONE_ERROR("instance_name: a\nlocal_instance: {port: 0}\n",
                   "local_instance.port: must be an integer 1..65535");
  EXPECT_ONE_ERROR("instance_name: a\nadmin: {port: 65536}\n",
                   "admin.port: must be an integer 0..65535");
  EXPECT_EQ(configOf("instance_name: a\nadmin: {port: 0}\nlistener: {port: 0}").admin.port, 0);
  EXPECT_EQ(configOf("instance_name: a\nlocal_instance: {port: 65535}").local_instance.port, 65535);
}

// Issue #10, finding 5: the admin listener has a connection cap of its own.
TEST(ConfigLoaderTest, AdminMaxConnections) {
  EXPECT_EQ(configOf("instance_name: a").admin.max_connections, 16u);
  EXPECT_EQ(configOf("instance_name: a\nadmin: {max_connections: 4}").admin.max_connections, 4u);
  EXPECT_ONE_ERROR("instance_name: a\nadmin: {max_connections: 0}\n",
                   "admin.max_connections: must be an integer 1..1024");
  EXPECT_ONE_ERROR("instance_name: a\nadmin: {max_connections: 5000}\n",
                   "admin.max_connections: must be an integer 1..1024");
}

TEST(ConfigLoaderTest, Addresses) {
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {address: example.com}\n",
                   "listener.address: must be an IPv4 or IPv6 literal or \"localhost\" (got "
                   "\"example.com\")");
  EXPECT_ONE_ERROR("instance_name: a\nlocal_instance: {address: 256.0.0.1}\n",
                   "local_instance.address: must be an IPv4 or IPv6 literal");
  EXPECT_ONE_ERROR("instance_name: a\nadmin: {address: \"[::1]\"}\n",
                   "admin.address: must be an IPv4 or IPv6 literal");
  EXPECT_ONE_ERROR("instance_name: a\nadmin: {address: {}}\n",
                   "admin.address: must be a string (got a mapping)");
  EXPECT_ONE_ERROR("instance_name: a\nlistener: 10000\n",
                   "listener: must be a mapping (got \"10000\")");
  EXPECT_EQ(configOf("instance_name: a\nlistener: {address: \"::1\"}").listener.host, "::1");
  EXPECT_EQ(configOf("instance_name: a\nlistener: {address: 0.0.0.0}").listener.host, "0.0.0.0");
}

TEST(ConfigLoaderTest, EndpointsMustNotCollide) {
  EXPECT_ONE_ERROR("instance_name: a\nadmin: {port: 10000}\n",
                   "admin.port: same address and port as listener");
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {port: 8080}\n",
                   "listener.port: same address and port as local_instance");
  configOf("instance_name: a\nadmin: {address: ::1, port: 10000}\n");
}

TEST(ConfigLoaderTest, Workers) {
  EXPECT_EQ(configOf("instance_name: a\nworkers: 0").workers, 0u);
  EXPECT_EQ(configOf("instance_name: a\nworkers: 64").workers, 64u);
  EXPECT_ONE_ERROR("instance_name: a\nworkers: 65\n", "workers: must be an integer 0..64");
  EXPECT_ONE_ERROR("instance_name: a\nworkers: two\n", "workers: must be an integer 0..64");
  EXPECT_ONE_ERROR("instance_name: a\nworkers: 99999999999999999999999\n",
                   "workers: must be an integer 0..64");
}

TEST(ConfigLoaderTest, LimitBounds) {
  const std::string base = "instance_name: a\nlimits:\n  ";
  EXPECT_ONE_ERROR(base + "max_request_header_bytes: 1023",
                   "limits.max_request_header_bytes: must be an integer 1024..1048576");
  EXPECT_ONE_ERROR(base + "max_request_header_bytes: 1048577",
                   "limits.max_request_header_bytes: must be an integer 1024..1048576");
  EXPECT_ONE_ERROR(base + "max_request_headers: 0",
                   "limits.max_request_headers: must be an integer 1..10000");
  EXPECT_ONE_ERROR(base + "max_request_headers: 10001",
                   "limits.max_request_headers: must be an integer 1..10000");
  EXPECT_ONE_ERROR(base + "replay_buffer_bytes: 33554433",
                   "limits.replay_buffer_bytes: must be an integer 0..33554432");
  EXPECT_ONE_ERROR(base + "buffer_high_watermark_bytes: 16383",
                   "limits.buffer_high_watermark_bytes: must be an integer 16384..");
  EXPECT_ONE_ERROR(base + "max_connections: 0", "limits.max_connections: must be an integer 1..");
  EXPECT_ONE_ERROR(base + "max_pending_upstream_requests: -1",
                   "limits.max_pending_upstream_requests: must be an integer 0..");
  EXPECT_ONE_ERROR(base + "max_active_requests_per_connection: 0",
                   "limits.max_active_requests_per_connection: must be an integer 1..100000");
  EXPECT_ONE_ERROR(base + "max_connections_per_client_address: -1",
                   "limits.max_connections_per_client_address: must be an integer 0..");
  EXPECT_ONE_ERROR("instance_name: a\nupstream: {max_connections: 0}",
                   "upstream.max_connections: must be an integer 1..");
  EXPECT_EQ(configOf(base + "replay_buffer_bytes: 33554432").limits.replay_buffer_bytes,
            32u * 1024 * 1024);
  EXPECT_EQ(configOf(base + "max_request_header_bytes: 1048576").limits.max_request_header_bytes,
            1024u * 1024);
}

TEST(ConfigLoaderTest, Durations) {
  const std::string base = "instance_name: a\ntimeouts:\n  ";
  EXPECT_EQ(configOf(base + "request_head: 500ms").timeouts.request_head, Millis(500));
  EXPECT_EQ(configOf(base + "request_head: 10s").timeouts.request_head, Millis(10'000));
  EXPECT_EQ(configOf(base + "request_head: 2m").timeouts.request_head, Millis(120'000));
  EXPECT_EQ(configOf(base + "request_head: 1h").timeouts.request_head, Millis(3'600'000));
  EXPECT_EQ(configOf(base + "request_head: 250").timeouts.request_head, Millis(250));
  EXPECT_EQ(configOf(base + "request_head: \"3s\"").timeouts.request_head, Millis(3000));
  EXPECT_EQ(configOf(base + "response: 0").timeouts.response, Millis(0));
  EXPECT_EQ(configOf(base + "response: 24h").timeouts.response, Millis(86'400'000));
  EXPECT_EQ(configOf(base + "response_head: 30s").timeouts.response_head, Millis(30'000));
  EXPECT_EQ(configOf(base + "response_head: 0").timeouts.response_head, Millis(0));  // none
  EXPECT_ONE_ERROR(base + "response_head: 25h", "timeouts.response_head: must be at most 24h");
  EXPECT_ONE_ERROR(base + "response_head: soon",
                   "timeouts.response_head: invalid duration \"soon\"");
  EXPECT_ONE_ERROR(base + "request_head: 10x",
                   "timeouts.request_head: invalid duration \"10x\" (use e.g. 500ms, 10s, 2m)");
  EXPECT_ONE_ERROR(base + "stream_idle: 1.5s", "timeouts.stream_idle: invalid duration \"1.5s\"");
  EXPECT_ONE_ERROR(base + "drain: -1s", "timeouts.drain: invalid duration \"-1s\"");
  EXPECT_ONE_ERROR(base + "request_head: 0", "timeouts.request_head: must be at least 1ms");
  EXPECT_ONE_ERROR(base + "keepalive_idle: 0s", "timeouts.keepalive_idle: must be at least 1ms");
  EXPECT_ONE_ERROR(base + "upstream_connect: 25h",
                   "timeouts.upstream_connect: must be at most 24h");
  EXPECT_ONE_ERROR(base + "upstream_idle: [1s]",
                   "timeouts.upstream_idle: must be a duration (e.g. 500ms, 10s, 2m) (got a list)");
}

TEST(ConfigLoaderTest, DrainDelay) {
  const std::string base = "instance_name: a\ntimeouts:\n  ";
  EXPECT_EQ(configOf(base + "drain_delay: 5s").timeouts.drain_delay, Millis(5'000));
  EXPECT_EQ(configOf(base + "drain_delay: 0").timeouts.drain_delay, Millis(0));
  EXPECT_ONE_ERROR(base + "drain_delay: 25h", "timeouts.drain_delay: must be at most 24h");
}

TEST(ConfigLoaderTest, LocalInstanceReadiness) {
  const std::string base = "instance_name: a\nlocal_instance: {address: 127.0.0.1, port: 8080, ";
  const FerryConfig empty = configOf(base + "readiness: {}}");
  EXPECT_TRUE(empty.local_instance.readiness.enabled);
  EXPECT_EQ(empty.local_instance.readiness.path, "/readyz");
  EXPECT_EQ(empty.local_instance.readiness.interval, Millis(2'000));
  EXPECT_EQ(empty.local_instance.readiness.timeout, Millis(1'000));
  EXPECT_EQ(empty.local_instance.port, 8080);
  const FerryConfig set =
      configOf(base + "readiness: {path: \"/health?x=1\", interval: 500ms, timeout: 200ms}}");
  EXPECT_EQ(set.local_instance.readiness.path, "/health?x=1");
  EXPECT_EQ(set.local_instance.readiness.interval, Millis(500));
  EXPECT_EQ(set.local_instance.readiness.timeout, Millis(200));
  EXPECT_FALSE(configOf(base + "readiness: {enabled: false}}").local_instance.readiness.enabled);
  EXPECT_ONE_ERROR(base + "readiness: {path: readyz}}",
                   "local_instance.readiness.path: must be a path starting with '/' without "
                   "spaces or control characters (got \"readyz\")");
  EXPECT_ONE_ERROR(base + "readiness: {path: \"/a b\"}}",
                   "local_instance.readiness.path: must be a path starting with '/' without "
                   "spaces or control characters (got \"/a b\")");
  EXPECT_ONE_ERROR(base + "readiness: {interval: 10ms}}",
                   "local_instance.readiness.interval: must be at least 100ms");
  EXPECT_ONE_ERROR(base + "readiness: {every: 1s}}", "local_instance.readiness.every: unknown key");
  // The endpoint's own errors keep their paths.
  EXPECT_ONE_ERROR(base + "readiness: {}, extra: 1}", "local_instance.extra: unknown key");
}

TEST(ConfigLoaderTest, UnknownKeysAtEveryLevel) {
  EXPECT_ONE_ERROR("instance_name: a\nlisten: {port: 1}\n", "listen: unknown key");
  EXPECT_ONE_ERROR("instance_name: a\nlimits: {max_foo: 1}\n", "limits.max_foo: unknown key");
  EXPECT_ONE_ERROR("instance_name: a\nlistener: {host: 127.0.0.1}\n", "listener.host: unknown key");
  EXPECT_ONE_ERROR("instance_name: a\ntimeouts: {connect: 1s}\n", "timeouts.connect: unknown key");
  EXPECT_ONE_ERROR("instance_name: a\nupstream: {max_conns: 1}\n",
                   "upstream.max_conns: unknown key");
  EXPECT_ONE_ERROR("instance_name: a\nforwarding: {enable: true}\n",
                   "forwarding.enable: unknown key");
}

TEST(ConfigLoaderTest, DuplicateKeys) {
  EXPECT_ONE_ERROR("instance_name: a\nworkers: 1\nworkers: 2\n", "workers: duplicate key");
  EXPECT_ONE_ERROR("instance_name: a\nlimits: {max_connections: 1, max_connections: 2}\n",
                   "limits.max_connections: duplicate key");
}

TEST(ConfigLoaderTest, WrongTypes) {
  EXPECT_ONE_ERROR("instance_name: a\nlimits: [1]\n", "limits: must be a mapping (got a list)");
  EXPECT_ONE_ERROR("instance_name: a\ntimeouts: 5s\n", "timeouts: must be a mapping");
  EXPECT_ONE_ERROR("instance_name: a\naccess_log: [a]\n", "access_log: must be a string");
  EXPECT_ONE_ERROR("instance_name: a\nforwarding: {enabled: yes}\n",
                   "forwarding.enabled: must be true or false (got \"yes\")");
  EXPECT_ONE_ERROR("instance_name: a\nforwarding: {enabled: \"true\"}\n",
                   "forwarding.enabled: must be true or false");
  EXPECT_ONE_ERROR("instance_name: a\nforwarding: {enabled: 1}\n",
                   "forwarding.enabled: must be true or false");
  EXPECT_EQ(configOf("instance_name: a\naccess_log: \"-\"").access_log, "-");
}

TEST(ConfigLoaderTest, CollectsEveryError) {
  const auto errors = errorsOf(R"(
instance_name: "bad name"
listener: {port: 70000, address: nowhere}
workers: 100
limits: {max_foo: 1, replay_buffer_bytes: -1}
timeouts: {request_head: 10x, drain: 1h}
forwarding:
  peers: {inst-1: "https://u@h"}
  peer_domains: [ok.example, "bad domain"]
  routes: [/ok/, nope]
bogus: 1
)");
  EXPECT_THAT(errors,
              UnorderedElementsAre(
                  StartsWith("instance_name: must be a token"),
                  StartsWith("listener.port: must be an integer 0..65535"),
                  StartsWith("listener.address: must be an IPv4 or IPv6 literal"),
                  StartsWith("workers: must be an integer 0..64"), "limits.max_foo: unknown key",
                  StartsWith("limits.replay_buffer_bytes: must be an integer 0..33554432"),
                  StartsWith("timeouts.request_head: invalid duration \"10x\""),
                  StartsWith("forwarding.peers.inst-1: userinfo not allowed"),
                  StartsWith("forwarding.peer_domains[1]: invalid domain \"bad domain\""),
                  StartsWith("forwarding.routes[1]: must be a path prefix starting with \"/\""),
                  "bogus: unknown key"));
}

TEST(ConfigLoaderFileTest, MissingFileNamesTheFile) {
  const LoadResult r = app::loadConfigFile("/nonexistent/ferry.yaml");
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].path, "/nonexistent/ferry.yaml");
  EXPECT_EQ(r.errors[0].message, "cannot read config file: No such file or directory");
  const LoadResult dir = app::loadConfigFile(::testing::TempDir());
  ASSERT_EQ(dir.errors.size(), 1u);
  EXPECT_THAT(dir.errors[0].message, HasSubstr("is a directory"));
}

TEST(ConfigLoaderFileTest, LoadsAFile) {
  const std::string path = ::testing::TempDir() + "/config_loader_test.yaml";
  std::ofstream(path) << "instance_name: from-file\nworkers: 3\n";
  const LoadResult r = app::loadConfigFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.config->instance_name, "from-file");
  EXPECT_EQ(r.config->workers, 3u);
}

}  // namespace
}  // namespace ferry::config
