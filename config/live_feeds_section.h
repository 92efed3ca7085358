#pragma once
// Reads and validates `live_feeds` (live SSE feeds that survive a hand-over: the live-feeds
// filter, docs/live-feeds.md). Called by the config loader; internal to config/.

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/ferry_config.h"
#include "config/yaml_reader.h"

namespace ferry::config {

// Fills `out` from `node` (the value of `live_feeds`), recording errors under `path`.
void readLiveFeeds(YamlReader& reader, const YAML::Node& node, const std::string& path,
                   LiveFeeds& out);

}  // namespace ferry::config
