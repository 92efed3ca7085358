#include "config/yaml_reader.h"

#include <set>

#include "config/duration.h"

namespace ferry::config {
namespace {

// yaml-cpp tags a quoted (non-plain) scalar "!"; a quoted value is a string, never a number.
bool isQuoted(const YAML::Node& node) { return node.Tag() == "!"; }

// Scalars echoed in messages are cut, so a mistaken 1 MB value stays a one-line error.
std::string quoted(const std::string& s) {
  constexpr size_t kMax = 80;
  return "\"" + (s.size() > kMax ? s.substr(0, kMax) + "..." : s) + "\"";
}

std::string got(const YAML::Node& node) {
  if (node.IsScalar()) {
    return " (got " + quoted(node.Scalar()) + ")";
  }
  if (node.IsMap()) {
    return " (got a mapping)";
  }
  if (node.IsSequence()) {
    return " (got a list)";
  }
  return " (got null)";
}

}  // namespace

std::string joinPath(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

void YamlReader::error(std::string path, std::string message) {
  errors_.push_back(ConfigError{std::move(path), std::move(message)});
}

bool YamlReader::checkMap(const YAML::Node& node, const std::string& path,
                          std::initializer_list<std::string_view> allowed) {
  if (!node.IsDefined() || node.IsNull()) {
    return false;
  }
  if (!node.IsMap()) {
    error(path,
          (path.empty() ? "the document must be a mapping" : "must be a mapping") + got(node));
    return false;
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      error(path, "keys must be scalars");
      continue;
    }
    const std::string& key = entry.first.Scalar();
    bool known = false;
    for (std::string_view a : allowed) {
      known = known || a == key;
    }
    if (!known) {
      error(joinPath(path, key), "unknown key");
    } else if (!seen.insert(key).second) {
      // yaml-cpp keeps the first of two equal keys; silently ignoring the second hides typos.
      error(joinPath(path, key), "duplicate key");
    }
  }
  // Unknown keys don't stop the known ones from being read, so their errors show up too.
  return true;
}

std::optional<uint64_t> YamlReader::unsignedValue(const YAML::Node& node) {
  if (!node.IsScalar() || isQuoted(node)) {
    return std::nullopt;
  }
  const std::string& s = node.Scalar();
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoull(s);
}

void YamlReader::readUint32(const YAML::Node& map, const std::string& path, const char* key,
                            uint32_t min, uint32_t max, uint32_t& out) {
  const YAML::Node node = map[key];
  if (!node.IsDefined()) {
    return;
  }
  const auto value = unsignedValue(node);
  if (!value || *value < min || *value > max) {
    error(joinPath(path, key),
          "must be an integer " + std::to_string(min) + ".." + std::to_string(max) + got(node));
    return;
  }
  out = static_cast<uint32_t>(*value);
}

void YamlReader::readPort(const YAML::Node& map, const std::string& path, const char* key,
                          uint16_t min, uint16_t& out) {
  uint32_t port = out;
  readUint32(map, path, key, min, 65535, port);
  out = static_cast<uint16_t>(port);
}

void YamlReader::readBool(const YAML::Node& map, const std::string& path, const char* key,
                          bool& out) {
  const YAML::Node node = map[key];
  if (!node.IsDefined()) {
    return;
  }
  // YAML 1.2 core schema booleans only; yaml-cpp would also take yes/no/on/off (YAML 1.1).
  const std::string s = node.IsScalar() && !isQuoted(node) ? node.Scalar() : "";
  if (s == "true" || s == "True" || s == "TRUE") {
    out = true;
  } else if (s == "false" || s == "False" || s == "FALSE") {
    out = false;
  } else {
    error(joinPath(path, key), "must be true or false" + got(node));
  }
}

std::optional<std::string> YamlReader::stringValue(const YAML::Node& node,
                                                   const std::string& path) {
  if (!node.IsScalar()) {
    error(path, "must be a string" + got(node));
    return std::nullopt;
  }
  return node.Scalar();
}

void YamlReader::readString(const YAML::Node& map, const std::string& path, const char* key,
                            std::string& out) {
  const YAML::Node node = map[key];
  if (!node.IsDefined()) {
    return;
  }
  if (auto value = stringValue(node, joinPath(path, key))) {
    out = std::move(*value);
  }
}

void YamlReader::readDuration(const YAML::Node& map, const std::string& path, const char* key,
                              Millis min, Millis max, Millis& out) {
  const YAML::Node node = map[key];
  if (!node.IsDefined()) {
    return;
  }
  const std::string full = joinPath(path, key);
  if (!node.IsScalar()) {
    error(full, "must be a duration (e.g. 500ms, 10s, 2m)" + got(node));
    return;
  }
  const auto value = parseDuration(node.Scalar());
  if (!value) {
    error(full, "invalid duration " + quoted(node.Scalar()) + " (use e.g. 500ms, 10s, 2m)");
  } else if (*value < min) {
    error(full, "must be at least " + formatDuration(min) + got(node));
  } else if (*value > max) {
    error(full, "must be at most " + formatDuration(max) + got(node));
  } else {
    out = *value;
  }
}

void YamlReader::readStringList(const YAML::Node& map, const std::string& path, const char* key,
                                std::vector<std::string>& out) {
  const YAML::Node node = map[key];
  if (!node.IsDefined()) {
    return;
  }
  const std::string full = joinPath(path, key);
  if (!node.IsSequence()) {
    error(full, "must be a list" + got(node));
    return;
  }
  std::vector<std::string> values;
  bool ok = true;
  for (size_t i = 0; i < node.size(); ++i) {
    auto value = stringValue(node[i], full + "[" + std::to_string(i) + "]");
    ok = ok && value.has_value();
    values.push_back(value.value_or(""));
  }
  if (ok) {
    out = std::move(values);
  }
}

}  // namespace ferry::config
