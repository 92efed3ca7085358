#pragma once
// The files a cell writes for its members: the fleet's urls.json and each ferry's YAML config.
// Called by Cell::create(); pure text generation plus an atomic write.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proxy/common/status.h"

namespace ferry::testing {

// {"inst-1":"http://127.0.0.1:<port>",...} in member order.
std::string urlsJson(const std::vector<std::pair<std::string, uint16_t>>& members);

struct FerryConfigParams {
  std::string instance_name;
  uint16_t emulator_port = 0;
  std::string fleet_file;
  int workers = 1;
  bool forwarding_enabled = true;
};
std::string ferryConfigYaml(const FerryConfigParams& params);

// Writes `path` atomically (a temporary file renamed over it), so a reader that watches the
// file never sees half of it.
Status writeFileAtomically(const std::string& path, const std::string& content);

}  // namespace ferry::testing
