#include "proxy/server/filter_setup.h"

namespace ferry::server {

Status setupFilters(Server& server, const config::FerryConfig& config) {
  // Owner forwarding joins here (filters/owner_forwarding).
  return Status::ok();
}

}  // namespace ferry::server
