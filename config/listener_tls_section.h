#pragma once
// Reads and validates `listener.tls` (server TLS on the listener). Called by the config
// loader; internal to config/.

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/ferry_config.h"
#include "config/yaml_reader.h"

namespace ferry::config {

// Fills `out` from `node` (the value of `listener.tls`), recording errors under `path`. The
// ALPN names and the files (certificate, key, client CA) are checked by the composition root
// as the listener will load them (app/config_check.h), each error under its own key path.
void readListenerTls(YamlReader& reader, const YAML::Node& node, const std::string& path,
                     ListenerTls& out);

}  // namespace ferry::config
