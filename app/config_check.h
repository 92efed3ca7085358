#pragma once
// The second half of loading the config: what only building it can check. config/ parses YAML
// into typed structs (config/config_loader.h) and includes nothing of the data plane; here, in
// the composition root, each value the data plane would refuse is checked with the data
// plane's own functions: the instance name and peer names (RFC 9110 tokens), the listener's
// ALPN protocols, peer domains and origins, the fleet file (read and parsed), and the TLS files
// (loaded as the listener and the pools load them). Errors name the exact key, as config's do,
// so `ferry --validate` and a start with a bad value refuse it the same way.
//
// Use: main() calls loadConfigFile() once, on the main thread, before anything is built; the
// config tests call loadConfigString(). Blocking file I/O (PEM and fleet files). The SIGHUP
// re-reads of those files are the Server's and ListenerTls's (they keep the last good one).

#include <string>
#include <vector>

#include "config/config_error.h"
#include "config/config_loader.h"
#include "config/ferry_config.h"

namespace ferry::app {

// config::loadConfigFile(path), then checkBuildable() on what it read (also when config found
// errors, so that every error shows at once): the config only when both found nothing.
config::LoadResult loadConfigFile(const std::string& path);
// The same for YAML text (config::loadConfigString).
config::LoadResult loadConfigString(const std::string& yaml);

// Appends one error per value the data plane would refuse (see the top of this file). A value
// that already has an error in `errors` (its key or a key below it) is not checked again.
void checkBuildable(const config::FerryConfig& config, std::vector<config::ConfigError>& errors);

}  // namespace ferry::app
