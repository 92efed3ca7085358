#pragma once
// Reads and validates `fault` (fault injection, filters/fault/). Called by the config loader;
// internal to config/.

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/ferry_config.h"
#include "config/yaml_reader.h"

namespace ferry::config {

// Fills `out` from `node` (the value of `fault`), recording errors under `path`. Nothing is
// injected unless the section says `enabled: true`.
void readFault(YamlReader& reader, const YAML::Node& node, const std::string& path, Fault& out);

// A delay as long as timeouts.stream_idle (or a non-zero timeouts.response) would end every
// delayed request in a 504 instead: an error on `fault.delay.duration`. Called once both
// sections are read.
void checkFaultAgainstTimeouts(YamlReader& reader, const Fault& fault, const Timeouts& timeouts);

}  // namespace ferry::config
