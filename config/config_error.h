#pragma once
// One configuration error: the key path it is about and what is wrong. Produced by the config
// loader (config_loader.h); printed at start-up, one line per error.

#include <string>

namespace ferry::config {

struct ConfigError {
  // Dotted key path with list indexes, e.g. "forwarding.peer_domains[1]"; empty for errors
  // about the document as a whole (YAML syntax); the file name when the file can't be read.
  std::string path;
  std::string message;

  // "path: message", or just the message when the path is empty.
  std::string toString() const { return path.empty() ? message : path + ": " + message; }

  bool operator==(const ConfigError&) const = default;
};

}  // namespace ferry::config
