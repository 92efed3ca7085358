#include "config/env_substitution.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>

#include "config/yaml_reader.h"

namespace ferry::config {
namespace {

bool isNameStart(char c) { return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9'); }

}  // namespace

std::optional<std::string> lookupProcessEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::optional<std::string> expandValue(const std::string& text, const EnvLookup& lookup,
                                       std::string& error) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t dollar = text.find('$', i);
    if (dollar == std::string::npos || dollar + 1 >= text.size()) {
      out.append(text, i, std::string::npos);
      break;
    }
    out.append(text, i, dollar - i);
    const char next = text[dollar + 1];
    if (next == '$') {  // "$$": a literal "$"
      out += '$';
      i = dollar + 2;
      continue;
    }
    if (next != '{') {
      out += '$';
      i = dollar + 1;
      continue;
    }
    const size_t close = text.find('}', dollar + 2);
    if (close == std::string::npos) {
      error = "unterminated ${ in \"" + text + "\"";
      return std::nullopt;
    }
    const std::string inner = text.substr(dollar + 2, close - dollar - 2);
    const size_t default_at = inner.find(":-");
    const std::string name = inner.substr(0, default_at);
    bool valid = !name.empty() && isNameStart(name[0]);
    for (char c : name) valid = valid && isNameChar(c);
    if (!valid) {
      error = "invalid variable name in ${" + inner + "} (letters, digits and _)";
      return std::nullopt;
    }
    std::optional<std::string> value = lookup(name);
    if (default_at != std::string::npos) {
      // Shell semantics: the default also replaces an empty value.
      if (!value || value->empty()) value = inner.substr(default_at + 2);
    } else if (!value) {
      error =
          "environment variable " + name + " is not set (${" + name + ":-default} gives a default)";
      return std::nullopt;
    }
    out += *value;
    i = close + 1;
  }
  return out;
}

namespace {

// ferry's config is four levels deep at most; YAML anchors and merge keys can make a document
// far deeper, or cyclic (`&a {<<: *a}`), so the walk is bounded in depth and in nodes.
constexpr int kMaxDepth = 16;
constexpr size_t kMaxNodes = 10'000;

struct Walk {
  const EnvLookup& lookup;
  std::vector<ConfigError>& errors;
  size_t nodes = 0;
  bool stopped = false;

  void visit(YAML::Node node, const std::string& path, int depth) {
    if (stopped) return;
    if (depth > kMaxDepth || ++nodes > kMaxNodes) {
      errors.push_back(
          ConfigError{path, "document nested too deep or too large (cyclic anchors?)"});
      stopped = true;
      return;
    }
    if (node.IsMap()) {
      for (auto entry : node) {
        // Keys stay as written; a non-scalar key is reported by the section readers.
        const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "?";
        visit(entry.second, joinPath(path, key), depth + 1);
      }
    } else if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i) {
        visit(node[i], path + "[" + std::to_string(i) + "]", depth + 1);
      }
    } else if (node.IsScalar() && node.Scalar().find('$') != std::string::npos) {
      std::string error;
      std::optional<std::string> value = expandValue(node.Scalar(), lookup, error);
      if (!value) {
        errors.push_back(ConfigError{path, error});
        return;
      }
      const std::string tag = node.Tag();  // "!" for a quoted scalar, "?" for a plain one
      node = *value;
      node.SetTag(tag);
    }
  }
};

}  // namespace

void expandEnvironment(YAML::Node& root, const std::string& path, const EnvLookup& lookup,
                       std::vector<ConfigError>& errors) {
  Walk{lookup, errors}.visit(root, path, 0);
}

}  // namespace ferry::config
