#pragma once
// The effective config as JSON, for the admin's GET /config: every key under the path it has
// in the YAML (defaults filled in, ${ENV} already substituted), so an operator sees what this
// process runs with. Secrets: file paths (key files, CAs) are shown, file contents never (the
// config holds only paths).

#include <cstdint>
#include <optional>
#include <string>

#include "config/ferry_config.h"

namespace ferry::config {

// What the running process adds to the config: values decided at start and the peer table's
// current version.
struct RuntimeFacts {
  uint32_t workers = 0;         // workers running (config `workers: 0` = one per core)
  bool batched_writes = false;  // the workers batch their writes (config on and io_uring usable)
  uint16_t listener_port = 0;   // the port bound (config port 0 = the kernel's choice)
  uint16_t admin_port = 0;
  std::optional<uint64_t> peer_table_version;  // none: forwarding is off
};

// {"config": {...}, "effective": {...}, "peer_table_version": N|null}
std::string renderConfigJson(const FerryConfig& config, const RuntimeFacts& facts);

}  // namespace ferry::config
