#pragma once
// Reads `access_log` (a path, or {path, format}) and `forwarded_headers`. Called by the config
// loader; internal to config/.

#include <yaml-cpp/yaml.h>

#include "config/ferry_config.h"
#include "config/yaml_reader.h"

namespace ferry::config {

// `access_log: PATH` (the older form, kept) or `access_log: {path: PATH, format: json|text}`.
void readAccessLog(YamlReader& reader, const YAML::Node& root, FerryConfig& out);

// `forwarded_headers: {x_forwarded: bool, trusted_hops: N}`.
void readForwardedHeaders(YamlReader& reader, const YAML::Node& node, ForwardedHeaders& out);

}  // namespace ferry::config
