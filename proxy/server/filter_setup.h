#pragma once
// Builds the filter chain a config asks for (owner forwarding when enabled) and registers
// what those filters need on the server (admin endpoints, reload hooks).

#include "config/ferry_config.h"
#include "proxy/common/status.h"
#include "proxy/server/server.h"

namespace ferry::server {

Status setupFilters(Server& server, const config::FerryConfig& config);

}  // namespace ferry::server
