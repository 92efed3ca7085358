#pragma once
// `${NAME}` and `${NAME:-default}` in ferry's YAML, so one file serves every member of a fleet
// (each sets INSTANCE_NAME, a port, a certificate path in its environment). Called by the
// config loader on the parsed document, before any value is read, at start, by --validate and
// on reload alike.
//
// Only values are expanded, never keys, and the text is substituted into the scalar after
// parsing, so a value's content cannot change the document's structure (a `#` or `: ` coming
// from the environment stays part of the value). A plain (unquoted) scalar stays plain, so
// `port: ${PORT}` is read as an integer. `$$` is a literal `$`; a `$` not followed by `{` or
// `$` is left as it is.
//   ${NAME}            the variable's value; unset is an error naming the key path
//   ${NAME:-default}   the value, or `default` when NAME is unset or empty
// Inside a flow collection (`[a, b]`, `{k: v}`) YAML reads `{` and `}` as structure: quote such
// a value ("${NAME}") or use a block list.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config_error.h"

namespace YAML {
class Node;
}

namespace ferry::config {

// Looks a variable up: its value, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// getenv().
std::optional<std::string> lookupProcessEnv(const std::string& name);

// Expands every scalar value below `node` (mappings and sequences, recursively) in place.
// Errors are appended as "<key path>: ..." and leave that scalar unchanged.
void expandEnvironment(YAML::Node& node, const std::string& path, const EnvLookup& lookup,
                       std::vector<ConfigError>& errors);

// Expands one value; nullopt (and `error` set) when it cannot be.
std::optional<std::string> expandValue(const std::string& text, const EnvLookup& lookup,
                                       std::string& error);

}  // namespace ferry::config
