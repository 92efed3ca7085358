#pragma once
// Reads and validates `listener.tls` (server TLS on the listener). Called by the config
// loader; internal to config/.

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/ferry_config.h"
#include "config/yaml_reader.h"
#include "proxy/tls/server_context.h"

namespace ferry::config {

// Fills `out` from `node` (the value of `listener.tls`), recording errors under `path`. The
// files are loaded as the data plane will load them, so `ferry --validate` reports a missing or
// malformed certificate, key or client CA under its own key path.
void readListenerTls(YamlReader& reader, const YAML::Node& node, const std::string& path,
                     ListenerTls& out);

// The server context settings `tls` asks for (session tickets as configured); also used by the
// server to build its context at start and on SIGHUP.
tls::ServerSettings serverSettings(const ListenerTls& tls);

}  // namespace ferry::config
