#pragma once
// Loads ferry's YAML configuration into a FerryConfig: parsing and the checks that need only
// the YAML. It includes nothing of the data plane; what only building can check (TLS files,
// the fleet file, peer origins and names) is app/config_check.h's, which main() calls through
// app::loadConfigFile(). Reads the config file and nothing else: no network, no sockets.
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
  // The config as far as it was read, even with errors (a value with an error keeps its
  // default); unset when the file or the YAML itself could not be read. For the checks that
  // only building can do (app/config_check.h), so that every error shows at once.
  std::optional<FerryConfig> parsed;

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
