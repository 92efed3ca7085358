#pragma once
// Reads and validates `listener.http2` (HTTP/2 on the listener). Called by the config loader;
// internal to config/.

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/ferry_config.h"
#include "config/yaml_reader.h"

namespace ferry::config {

// Fills `out` from `node` (the value of `listener.http2`), recording errors under `path`.
void readListenerHttp2(YamlReader& reader, const YAML::Node& node, const std::string& path,
                       ListenerHttp2& out);

}  // namespace ferry::config
