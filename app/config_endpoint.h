#pragma once
// Admin GET /config: the effective config as JSON (config/config_json.h), with what the
// running process decided at start (workers, bound ports) and the peer table's version.
// Separate from the other admin routes so it can be added or removed on its own.

#include <cstdint>

#include "app/server.h"
#include "config/ferry_config.h"

namespace ferry::app {

// Registers /config on `server`'s admin listener. Call after server.start() (the bound ports
// are known then). `config` and `server` must outlive the admin listener.
void addConfigEndpoint(Server& server, const config::FerryConfig& config, uint32_t workers);

}  // namespace ferry::app
