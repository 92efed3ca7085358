#pragma once
// Loads ferry's YAML configuration into a FerryConfig. Called once by main() before the server
// starts (and again on a config reload, off the workers' threads). Validation reads the fleet
// file from disk when one is configured, and nothing else: no network, no sockets.
//
// Every error is collected, not just the first, each naming its exact key path:
//   listener.port: must be an integer 0..65535 (got "70000")
//   timeouts.request_head: invalid duration "10x" (use e.g. 500ms, 10s, 2m)
//   limits.max_foo: unknown key
// Unknown keys and wrong types are errors at every level. The schema and the defaults are in
// config/ferry_config.h and config/examples/ferry.yaml.

#include <optional>
#include <string>
#include <vector>

#include "config/config_error.h"
#include "config/ferry_config.h"

namespace ferry::config {

struct LoadResult {
  std::optional<FerryConfig> config;  // set only when there are no errors
  std::vector<ConfigError> errors;

  bool ok() const { return errors.empty() && config.has_value(); }
};

// Reads and validates `path`. A file that can't be read yields one error whose path is the file
// name. A relative `forwarding.fleet_file` is resolved against the directory of `path`, and
// the resolved path is what the returned config holds.
LoadResult loadConfigFile(const std::string& path);

// Validates YAML text. A relative `forwarding.fleet_file` is resolved against the current
// working directory (left as written).
LoadResult loadConfigString(const std::string& yaml);

}  // namespace ferry::config
