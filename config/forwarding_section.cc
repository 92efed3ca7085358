#include "config/forwarding_section.h"

#include <filesystem>
#include <set>

#include "config/duration.h"

namespace ferry::config {
namespace {

// Checking the fleet file more often than this is busy work.
constexpr Millis kMinWatchInterval{100};

void readPeers(YamlReader& reader, const YAML::Node& node, const std::string& path,
               std::map<std::string, std::string>& out) {
  if (!node.IsDefined()) {
    return;
  }
  if (!node.IsMap()) {
    reader.error(path, "must be a mapping of instance name to origin");
    return;
  }
  std::map<std::string, std::string> peers;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      reader.error(path, "keys must be instance names");
      continue;
    }
    const std::string& name = entry.first.Scalar();
    const std::string entry_path = joinPath(path, name);
    auto origin = reader.stringValue(entry.second, entry_path);
    if (origin && !peers.emplace(name, *origin).second) {
      reader.error(entry_path, "duplicate key");
    }
  }
  out = std::move(peers);
}

// A relative fleet file is resolved against `base_dir`; app/config_check.cc reads and parses it.
void resolveFleetFile(YamlReader& reader, const std::string& path, const std::string& base_dir,
                      std::string& fleet_file) {
  if (fleet_file.empty()) {
    reader.error(path, "must not be empty (omit it to use inline peers)");
    return;
  }
  std::filesystem::path file(fleet_file);
  if (file.is_relative() && !base_dir.empty()) {
    fleet_file = (std::filesystem::path(base_dir) / file).lexically_normal().string();
  }
}

// `forwarding.tls`: the file names; app/config_check.cc loads the files as the pools will.
void readTls(YamlReader& reader, const YAML::Node& node, const std::string& path,
             ForwardingTls& out) {
  if (!reader.checkMap(node, path, {"ca_file", "verify", "client_cert_file", "client_key_file"})) {
    return;
  }
  reader.readString(node, path, "ca_file", out.ca_file);
  reader.readBool(node, path, "verify", out.verify);
  reader.readString(node, path, "client_cert_file", out.client_cert_file);
  reader.readString(node, path, "client_key_file", out.client_key_file);
  for (const char* key : {"ca_file", "client_cert_file", "client_key_file"}) {
    if (node[key].IsDefined() && node[key].IsScalar() && node[key].Scalar().empty()) {
      reader.error(joinPath(path, key), "must not be empty (omit it instead)");
      return;
    }
  }
}

// `forwarding.owner_protocol`: auto | h2 | http1.
void readOwnerProtocol(YamlReader& reader, const YAML::Node& node, const std::string& path,
                       OwnerProtocol& out) {
  std::string value;
  if (!node["owner_protocol"].IsDefined()) return;
  const size_t errors_before = reader.errorCount();
  reader.readString(node, path, "owner_protocol", value);
  if (reader.errorCount() != errors_before) return;
  if (value == "auto") {
    out = OwnerProtocol::Auto;
  } else if (value == "h2") {
    out = OwnerProtocol::H2;
  } else if (value == "http1") {
    out = OwnerProtocol::Http1;
  } else {
    reader.error(joinPath(path, "owner_protocol"),
                 "must be one of auto, h2, http1, got \"" + value + "\"");
  }
}

// `forwarding.owner_http2`: the multiplexed connections' knobs. A PING timeout of at least
// 100ms: below it a loaded owner's ack is late for no fault of the connection.
void readOwnerHttp2(YamlReader& reader, const YAML::Node& node, const std::string& path,
                    OwnerHttp2& out) {
  if (!reader.checkMap(node, path,
                       {"max_streams_per_connection", "ping_interval", "ping_timeout"})) {
    return;
  }
  reader.readUint32(node, path, "max_streams_per_connection", 1, 100'000,
                    out.max_streams_per_connection);
  reader.readDuration(node, path, "ping_interval", Millis{100}, kMaxDuration, out.ping_interval);
  reader.readDuration(node, path, "ping_timeout", Millis{100}, kMaxDuration, out.ping_timeout);
}

// `forwarding.owner_routing`: bounds a wrong entry's life (ttl) and the table's memory.
void readOwnerRouting(YamlReader& reader, const YAML::Node& node, const std::string& path,
                      OwnerRouting& out) {
  if (!reader.checkMap(node, path, {"enabled", "max_entries", "ttl"})) return;
  reader.readBool(node, path, "enabled", out.enabled);
  reader.readUint32(node, path, "max_entries", 1, 10'000'000, out.max_entries);
  reader.readDuration(node, path, "ttl", Millis(100), Millis(86'400'000), out.ttl);
}

}  // namespace

void readForwarding(YamlReader& reader, const YAML::Node& node, const std::string& path,
                    const std::string& base_dir, Forwarding& out) {
  if (!reader.checkMap(
          node, path,
          {"enabled", "fleet_file", "peers", "allow_http_peers", "peer_domains", "routes",
           "watch_interval", "tls", "owner_protocol", "owner_http2", "owner_routing"})) {
    return;
  }
  reader.readBool(node, path, "enabled", out.enabled);
  reader.readString(node, path, "fleet_file", out.fleet_file);
  readPeers(reader, node["peers"], joinPath(path, "peers"), out.peers);
  reader.readBool(node, path, "allow_http_peers", out.allow_http_peers);
  reader.readStringList(node, path, "peer_domains", out.peer_domains);
  reader.readStringList(node, path, "routes", out.routes);
  reader.readDuration(node, path, "watch_interval", kMinWatchInterval, kMaxDuration,
                      out.watch_interval);
  readTls(reader, node["tls"], joinPath(path, "tls"), out.tls);
  readOwnerProtocol(reader, node, path, out.owner_protocol);
  readOwnerHttp2(reader, node["owner_http2"], joinPath(path, "owner_http2"), out.owner_http2);
  readOwnerRouting(reader, node["owner_routing"], joinPath(path, "owner_routing"),
                   out.owner_routing);

  const std::string routes_path = joinPath(path, "routes");
  for (size_t i = 0; i < out.routes.size(); ++i) {
    const std::string& route = out.routes[i];
    bool printable = true;
    for (char c : route) {
      const auto u = static_cast<unsigned char>(c);
      printable = printable && u > 0x20 && u != 0x7f && c != '?' && c != '#';
    }
    if (route.empty() || route.front() != '/' || !printable) {
      reader.error(routes_path + "[" + std::to_string(i) + "]",
                   "must be a path prefix starting with \"/\" (no spaces, \"?\" or \"#\"), got \"" +
                       route + "\"");
    }
  }

  const bool has_file = node["fleet_file"].IsDefined();
  if (has_file && !out.peers.empty()) {
    reader.error(joinPath(path, "peers"),
                 "cannot be used together with forwarding.fleet_file (choose one)");
  }
  if (has_file && node["fleet_file"].IsScalar()) {
    resolveFleetFile(reader, joinPath(path, "fleet_file"), base_dir, out.fleet_file);
  }
}

}  // namespace ferry::config
