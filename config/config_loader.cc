#include "config/config_loader.h"

#include <arpa/inet.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/duration.h"
#include "config/env_substitution.h"
#include "config/fault_section.h"
#include "config/forwarding_section.h"
#include "config/listener_http2_section.h"
#include "config/listener_tls_section.h"
#include "config/live_feeds_section.h"
#include "config/observability_section.h"
#include "config/readiness_section.h"
#include "config/yaml_reader.h"

namespace ferry::config {
namespace {

constexpr uint32_t kKiB = 1024;
constexpr uint32_t kMiB = 1024 * 1024;
constexpr uint32_t kMaxWorkers = 64;

bool isValidAddress(const std::string& host) {
  in6_addr addr;
  return host == "localhost" || inet_pton(AF_INET, host.c_str(), &addr) == 1 ||
         inet_pton(AF_INET6, host.c_str(), &addr) == 1;
}

template <typename EndpointT>
void readAddressAndPort(YamlReader& reader, const YAML::Node& node, const std::string& path,
                        uint16_t min_port, EndpointT& out) {
  std::string address = out.host;
  reader.readString(node, path, "address", address);
  if (!isValidAddress(address)) {
    reader.error(joinPath(path, "address"),
                 "must be an IPv4 or IPv6 literal or \"localhost\" (got \"" + address + "\")");
  } else {
    out.host = address;
  }
  reader.readPort(node, path, "port", min_port, out.port);
}

void readEndpoint(YamlReader& reader, const YAML::Node& node, const std::string& path,
                  uint16_t min_port, Endpoint& out) {
  if (!reader.checkMap(node, path, {"address", "port"})) {
    return;
  }
  readAddressAndPort(reader, node, path, min_port, out);
}

// `listener`: an endpoint, and `tls` (listener_tls_section.h) when it speaks TLS.
void readListener(YamlReader& reader, const YAML::Node& node, Listener& out) {
  // An absent key is an invalid node in yaml-cpp: only IsDefined() may be asked of it.
  if (!node.IsDefined() || !node.IsMap() ||
      (!node["tls"].IsDefined() && !node["reuse_port"].IsDefined() && !node["http2"].IsDefined())) {
    readEndpoint(reader, node, "listener", 0, out);
    return;
  }
  if (node["http2"].IsDefined())
    readListenerHttp2(reader, node["http2"], "listener.http2", out.http2);
  // Without HTTP/2 the default ALPN list offers only http/1.1 (an explicit "h2" is refused).
  if (!out.http2.enabled) out.tls.alpn = {"http/1.1"};
  if (node["tls"].IsDefined()) {
    readListenerTls(reader, node["tls"], "listener.tls", out.tls);
    if (!out.http2.enabled) {
      for (size_t i = 0; i < out.tls.alpn.size(); ++i) {
        if (out.tls.alpn[i] == "h2") {
          reader.error("listener.tls.alpn[" + std::to_string(i) + "]",
                       "\"h2\" needs listener.http2.enabled");
        }
      }
    }
  }
  reader.readBool(node, "listener", "reuse_port", out.reuse_port);
  YAML::Node endpoint = YAML::Clone(node);
  endpoint.remove("tls");
  endpoint.remove("reuse_port");
  endpoint.remove("http2");
  readEndpoint(reader, endpoint, "listener", 0, out);
}

// `local_instance`: an endpoint, and `readiness` (readiness_section.h) when ferry probes it.
void readLocalInstance(YamlReader& reader, const YAML::Node& node, LocalInstance& out) {
  if (!node.IsDefined() || !node.IsMap() || !node["readiness"].IsDefined()) {
    readEndpoint(reader, node, "local_instance", 1, out);
    return;
  }
  readReadiness(reader, node["readiness"], "local_instance.readiness", out.readiness);
  YAML::Node endpoint = YAML::Clone(node);
  endpoint.remove("readiness");
  readEndpoint(reader, endpoint, "local_instance", 1, out);
}

void readAdmin(YamlReader& reader, const YAML::Node& node, const std::string& path, Admin& out) {
  if (!reader.checkMap(node, path, {"address", "port", "max_connections"})) {
    return;
  }
  readAddressAndPort(reader, node, path, 0, out);
  // A handful of scrapers and operators; every admin connection is a descriptor the data
  // plane cannot use.
  reader.readUint32(node, path, "max_connections", 1, 1024, out.max_connections);
}

void readLimits(YamlReader& reader, const YAML::Node& node, const std::string& path, Limits& out) {
  if (!reader.checkMap(
          node, path,
          {"max_request_header_bytes", "max_request_headers", "max_connections",
           "replay_buffer_bytes", "buffer_high_watermark_bytes", "max_pending_upstream_requests",
           "max_active_requests_per_connection", "max_connections_per_client_address"})) {
    return;
  }
  reader.readUint32(node, path, "max_request_header_bytes", kKiB, kMiB,
                    out.max_request_header_bytes);
  // Envoy's default is 100 as well; 10,000 fields would still fit in a 1 MiB head.
  reader.readUint32(node, path, "max_request_headers", 1, 10'000, out.max_request_headers);
  reader.readUint32(node, path, "max_connections", 1, 1'000'000, out.max_connections);
  // A Streams instance accepts bodies up to 32 MiB; keeping more for a replay is pointless.
  reader.readUint32(node, path, "replay_buffer_bytes", 0, 32 * kMiB, out.replay_buffer_bytes);
  reader.readUint32(node, path, "buffer_high_watermark_bytes", 16 * kKiB, 1024 * kMiB,
                    out.buffer_high_watermark_bytes);
  reader.readUint32(node, path, "max_pending_upstream_requests", 0, 1'000'000,
                    out.max_pending_upstream_requests);
  // HTTP/2 listeners take up to 100000 streams per connection; a share above that means none.
  reader.readUint32(node, path, "max_active_requests_per_connection", 1, 100'000,
                    out.max_active_requests_per_connection);
  reader.readUint32(node, path, "max_connections_per_client_address", 0, 1'000'000,
                    out.max_connections_per_client_address);
}

void readTimeouts(YamlReader& reader, const YAML::Node& node, const std::string& path,
                  Timeouts& out) {
  if (!reader.checkMap(
          node, path,
          {"request_head", "keepalive_idle", "upstream_connect", "upstream_idle", "stream_idle",
           "request_body_idle", "response", "response_head", "drain_delay", "drain"})) {
    return;
  }
  constexpr Millis kOne{1};
  constexpr Millis kZero{0};
  reader.readDuration(node, path, "request_head", kOne, kMaxDuration, out.request_head);
  reader.readDuration(node, path, "keepalive_idle", kOne, kMaxDuration, out.keepalive_idle);
  reader.readDuration(node, path, "upstream_connect", kOne, kMaxDuration, out.upstream_connect);
  reader.readDuration(node, path, "upstream_idle", kOne, kMaxDuration, out.upstream_idle);
  reader.readDuration(node, path, "stream_idle", kOne, kMaxDuration, out.stream_idle);
  // 0 = none
  reader.readDuration(node, path, "request_body_idle", kZero, kMaxDuration, out.request_body_idle);
  reader.readDuration(node, path, "response", kZero, kMaxDuration, out.response);  // 0 = none
  reader.readDuration(node, path, "response_head", kZero, kMaxDuration, out.response_head);
  reader.readDuration(node, path, "drain_delay", kZero, kMaxDuration, out.drain_delay);
  reader.readDuration(node, path, "drain", kZero, kMaxDuration, out.drain);
}

void readUpstream(YamlReader& reader, const YAML::Node& node, const std::string& path,
                  UpstreamPool& out) {
  if (!reader.checkMap(node, path, {"max_connections"})) {
    return;
  }
  reader.readUint32(node, path, "max_connections", 1, 100'000, out.max_connections);
}

// Two endpoints that are the same literal address and a fixed port can't both be bound (or,
// for the local instance, would make ferry forward to itself).
template <typename A, typename B>
void checkDistinct(YamlReader& reader, const A& a, const std::string& a_name, const B& b,
                   const std::string& b_name) {
  if (a.port != 0 && a.port == b.port && a.host == b.host) {
    reader.error(b_name + ".port", "same address and port as " + a_name);
  }
}

void readRoot(YamlReader& reader, const YAML::Node& root, const std::string& base_dir,
              FerryConfig& config) {
  if (!root.IsDefined() || root.IsNull()) {  // an empty document
    reader.error("instance_name", "required (this instance's name in the fleet)");
    return;
  }
  if (!reader.checkMap(root, "",
                       {"instance_name", "listener", "local_instance", "admin", "workers",
                        "batched_writes", "limits", "timeouts", "upstream", "forwarding",
                        "live_feeds", "access_log", "forwarded_headers", "fault"})) {
    return;
  }
  if (!root["instance_name"].IsDefined()) {
    reader.error("instance_name", "required (this instance's name in the fleet)");
  } else {
    std::string name;
    reader.readString(root, "", "instance_name", name);
    config.instance_name = name;  // a token? app/config_check.cc, with the peers' check
  }
  readListener(reader, root["listener"], config.listener);
  readLocalInstance(reader, root["local_instance"], config.local_instance);
  readAdmin(reader, root["admin"], "admin", config.admin);
  reader.readUint32(root, "", "workers", 0, kMaxWorkers, config.workers);
  reader.readBool(root, "", "batched_writes", config.batched_writes);
  readLimits(reader, root["limits"], "limits", config.limits);
  readTimeouts(reader, root["timeouts"], "timeouts", config.timeouts);
  readUpstream(reader, root["upstream"], "upstream", config.upstream);
  readForwarding(reader, root["forwarding"], "forwarding", base_dir, config.forwarding);
  readLiveFeeds(reader, root["live_feeds"], "live_feeds", config.live_feeds);
  readAccessLog(reader, root, config);
  readForwardedHeaders(reader, root["forwarded_headers"], config.forwarded_headers);
  readFault(reader, root["fault"], "fault", config.fault);
  checkFaultAgainstTimeouts(reader, config.fault, config.timeouts);

  checkDistinct(reader, config.listener, "listener", config.admin, "admin");
  checkDistinct(reader, config.local_instance, "local_instance", config.listener, "listener");
}

LoadResult load(const std::string& yaml, const std::string& base_dir) {
  LoadResult result;
  YamlReader reader(result.errors);
  FerryConfig config;
  bool read = false;
  try {
    YAML::Node root = YAML::Load(yaml);
    expandEnvironment(root, "", lookupProcessEnv, result.errors);
    readRoot(reader, root, base_dir, config);
    read = root.IsMap();
  } catch (const YAML::ParserException& e) {
    result.errors.push_back(ConfigError{"", "invalid YAML at line " +
                                                std::to_string(e.mark.line + 1) + ", column " +
                                                std::to_string(e.mark.column + 1) + ": " + e.msg});
  } catch (const YAML::Exception& e) {
    // The readers only use non-throwing accessors; this is a backstop, not a code path.
    result.errors.push_back(ConfigError{"", std::string("invalid YAML: ") + e.what()});
  }
  if (read) result.parsed = config;
  if (result.errors.empty()) {
    result.config = std::move(config);
  }
  return result;
}

}  // namespace

LoadResult loadConfigFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return LoadResult{std::nullopt, {ConfigError{path, "cannot read config file: is a directory"}}};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return LoadResult{
        std::nullopt,
        {ConfigError{path, std::string("cannot read config file: ") + std::strerror(errno)}}};
  }
  std::ostringstream text;
  text << in.rdbuf();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return load(text.str(), dir.empty() ? "." : dir);
}

LoadResult loadConfigString(const std::string& yaml) { return load(yaml, ""); }

}  // namespace ferry::config
