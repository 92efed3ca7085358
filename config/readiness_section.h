#pragma once
// Reads and validates `local_instance.readiness` (ferry probes the instance's readiness route
// and fails its own /ready while the probe fails). Called by the config loader; internal to
// config/.

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/ferry_config.h"
#include "config/yaml_reader.h"

namespace ferry::config {

// Fills `out` from `node` (the value of `local_instance.readiness`), recording errors under
// `path`. A present section enables the probe unless it says `enabled: false`; an empty one
// (`readiness: {}`) probes with the defaults.
void readReadiness(YamlReader& reader, const YAML::Node& node, const std::string& path,
                   Readiness& out);

}  // namespace ferry::config
