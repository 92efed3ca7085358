#pragma once
// The files a cell writes for its members: the fleet's urls.json and each ferry's YAML config.
// Called by Cell::create(); pure text generation plus an atomic write.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proxy/common/status.h"

namespace ferry::testing {

// {"inst-1":"<scheme>://127.0.0.1:<port>",...} in member order.
std::string urlsJson(const std::vector<std::pair<std::string, uint16_t>>& members,
                     const std::string& scheme = "http");

struct FerryConfigParams {
  std::string instance_name;
  uint16_t emulator_port = 0;
  std::string fleet_file;
  int workers = 1;
  bool forwarding_enabled = true;
  // forwarding.owner_routing.enabled; off here: the cell is the bench's baseline arm "ferry"
  // (bench/cell/run.py --routing on adds ferries with it on).
  bool owner_routing = false;
  // https mode (cell_tls.h): YAML flow maps for listener.tls and forwarding.tls; empty: plain.
  // With them, http peer URLs are refused (allow_http_peers: false).
  std::string listener_tls;
  std::string forwarding_tls;
};
std::string ferryConfigYaml(const FerryConfigParams& params);

// Writes `path` atomically (a temporary file renamed over it), so a reader that watches the
// file never sees half of it.
Status writeFileAtomically(const std::string& path, const std::string& content);

}  // namespace ferry::testing
