#pragma once
// Reads and validates the `forwarding:` section (owner forwarding and its peer table). Called
// by the config loader; internal to config/.

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/ferry_config.h"
#include "config/yaml_reader.h"

namespace ferry::config {

// Fills `out` from `node` (the value of `forwarding`), recording errors under `path`. A
// relative fleet file is resolved against `base_dir` (when not empty). Peer names and origins,
// peer domains, the fleet file's content and the TLS files are checked by the composition root
// with the data plane's parsers (app/config_check.h), not here.
void readForwarding(YamlReader& reader, const YAML::Node& node, const std::string& path,
                    const std::string& base_dir, Forwarding& out);

}  // namespace ferry::config
