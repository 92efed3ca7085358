#pragma once
// Reads and validates the `forwarding:` section (owner forwarding and its peer table). Called
// by the config loader; internal to config/.

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/ferry_config.h"
#include "config/yaml_reader.h"

namespace ferry::config {

// Fills `out` from `node` (the value of `forwarding`), recording errors under `path`. Inline
// peers are checked with the data plane's peer parser; a fleet file is read from disk and
// parsed, a relative one first resolved against `base_dir` (when not empty).
void readForwarding(YamlReader& reader, const YAML::Node& node, const std::string& path,
                    const std::string& base_dir, Forwarding& out);

}  // namespace ferry::config
