#include "app/config_check.h"

#include "proxy/peers/peer_table.h"
#include "proxy/peers/peer_table_parser.h"
#include "proxy/server/listener_tls.h"
#include "proxy/tls/client_context.h"
#include "proxy/tls/server_context.h"

namespace ferry::app {
namespace {

using config::ConfigError;

// An error at `key` or below it (key.x, key[i]) is already in `errors`.
bool hasErrorAt(const std::vector<ConfigError>& errors, const std::string& key) {
  for (const ConfigError& e : errors) {
    if (e.path.compare(0, key.size(), key) != 0) continue;
    if (e.path.size() == key.size() || e.path[key.size()] == '.' || e.path[key.size()] == '[') {
      return true;
    }
  }
  return false;
}

std::string indexed(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string keyed(const std::string& path, const std::string& field) {
  return field.empty() ? path : path + "." + field;
}

void checkListenerTls(const config::ListenerTls& in, std::vector<ConfigError>& errors) {
  if (!in.enabled) return;
  const size_t errors_before = errors.size();
  for (size_t i = 0; i < in.alpn.size(); ++i) {
    if (!tls::isSupportedAlpn(in.alpn[i])) {
      errors.push_back({indexed("listener.tls.alpn", i),
                        "unsupported protocol \"" + in.alpn[i] + "\" (supported: h2, http/1.1)"});
    }
  }
  if (errors.size() != errors_before || hasErrorAt(errors, "listener.tls")) return;
  // Load the files now, as the listener will (ListenerTls::load()).
  tls::ServerSettings settings = server::serverSettings(in);
  settings.session_tickets = false;  // no keys needed to check the files
  std::string field;
  auto context = tls::ServerContext::create(settings, nullptr, &field);
  if (!context.isOk()) {
    errors.push_back({keyed("listener.tls", field), context.status().message()});
  }
}

// `forwarding.tls`: the files are loaded exactly as the pools will load them (Server::
// loadTlsContext()), so a missing, unreadable or malformed file (or a key that does not match
// its certificate) fails at start and in `ferry --validate`, naming the key.
void checkForwardingTls(const config::ForwardingTls& t, std::vector<ConfigError>& errors) {
  if (t.ca_file.empty() && t.client_cert_file.empty() && t.client_key_file.empty()) return;
  if (hasErrorAt(errors, "forwarding.tls")) return;
  std::string field;
  auto context = tls::ClientContext::create(
      {t.ca_file, t.verify, t.client_cert_file, t.client_key_file}, &field);
  if (!context.isOk()) {
    errors.push_back({keyed("forwarding.tls", field), context.status().message()});
  }
}

// Every entry is checked, so all bad peers are reported at once (the data plane's
// parsePeerMap() stops at the first, which is what a table swap wants).
void checkPeers(const config::Forwarding& fwd, const peers::PeerPolicy& policy,
                std::vector<ConfigError>& errors) {
  for (const auto& [name, url] : fwd.peers) {
    const std::string path = "forwarding.peers." + name;
    if (!peers::isValidInstanceName(name)) {
      errors.push_back({path, "not a valid instance name (RFC 9110 token, 1..128 characters)"});
      continue;
    }
    auto origin = peers::parseOrigin(url, policy);
    if (!origin.isOk()) errors.push_back({path, origin.status().message()});
  }
}

void checkForwarding(const config::Forwarding& fwd, std::vector<ConfigError>& errors) {
  for (size_t i = 0; i < fwd.peer_domains.size(); ++i) {
    const Status status = peers::validatePeerDomain(fwd.peer_domains[i]);
    if (!status.isOk()) {
      errors.push_back({indexed("forwarding.peer_domains", i), status.message()});
    }
  }
  const peers::PeerPolicy policy{fwd.allow_http_peers, fwd.peer_domains};
  checkPeers(fwd, policy, errors);
  if (!fwd.fleet_file.empty() && !hasErrorAt(errors, "forwarding.fleet_file")) {
    auto table = peers::loadFleetFile(fwd.fleet_file, policy);
    if (!table.isOk()) errors.push_back({"forwarding.fleet_file", table.status().message()});
  }
  checkForwardingTls(fwd.tls, errors);
}

config::LoadResult checked(config::LoadResult loaded) {
  if (!loaded.parsed) return loaded;
  checkBuildable(*loaded.parsed, loaded.errors);
  if (!loaded.errors.empty()) loaded.config.reset();
  return loaded;
}

}  // namespace

void checkBuildable(const config::FerryConfig& config, std::vector<ConfigError>& errors) {
  if (!hasErrorAt(errors, "instance_name") && !peers::isValidInstanceName(config.instance_name)) {
    errors.push_back(
        {"instance_name", "must be a token (RFC 9110 tchar), 1..128 characters (got \"" +
                              config.instance_name + "\")"});
  }
  checkListenerTls(config.listener.tls, errors);
  checkForwarding(config.forwarding, errors);
}

config::LoadResult loadConfigFile(const std::string& path) {
  return checked(config::loadConfigFile(path));
}

config::LoadResult loadConfigString(const std::string& yaml) {
  return checked(config::loadConfigString(yaml));
}

}  // namespace ferry::app
