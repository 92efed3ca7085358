#pragma once
// Typed, error-collecting reads from a yaml-cpp node tree. Internal to config/ (the only place
// that includes yaml-cpp). Each read*() takes the mapping that holds the key and the mapping's
// own path; an absent key leaves the target (its default) untouched, a bad value records a
// ConfigError at "<path>.<key>" and also leaves the target untouched, so one pass over the
// document reports every error.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_error.h"
#include "config/ferry_config.h"

namespace ferry::config {

// "a.b" from ("a", "b"); just "b" at the top level.
std::string joinPath(const std::string& path, std::string_view key);

class YamlReader {
 public:
  explicit YamlReader(std::vector<ConfigError>& errors) : errors_(errors) {}

  void error(std::string path, std::string message);
  size_t errorCount() const { return errors_.size(); }

  // Checks that `node` is a mapping whose keys are scalars from `allowed`, each present once;
  // records "must be a mapping", "unknown key" and "duplicate key" errors. Returns true when
  // there are fields to read: false when `node` is absent or null (an empty section: keep the
  // defaults) or not a mapping. Unknown keys don't make it return false, so the known fields
  // are still read and their errors reported alongside.
  bool checkMap(const YAML::Node& node, const std::string& path,
                std::initializer_list<std::string_view> allowed);

  void readUint32(const YAML::Node& map, const std::string& path, const char* key, uint32_t min,
                  uint32_t max, uint32_t& out);
  void readPort(const YAML::Node& map, const std::string& path, const char* key, uint16_t min,
                uint16_t& out);
  void readBool(const YAML::Node& map, const std::string& path, const char* key, bool& out);
  void readString(const YAML::Node& map, const std::string& path, const char* key,
                  std::string& out);
  void readDuration(const YAML::Node& map, const std::string& path, const char* key, Millis min,
                    Millis max, Millis& out);
  // A list of strings; each element is reported as "<path>.<key>[i]". Replaces `out` only when
  // every element is a string.
  void readStringList(const YAML::Node& map, const std::string& path, const char* key,
                      std::vector<std::string>& out);

  // The scalar text of `node` when it is a non-null scalar, else records "must be a string".
  std::optional<std::string> stringValue(const YAML::Node& node, const std::string& path);

 private:
  std::optional<uint64_t> unsignedValue(const YAML::Node& node);

  std::vector<ConfigError>& errors_;
};

}  // namespace ferry::config
