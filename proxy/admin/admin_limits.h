#pragma once
// The admin listener's limits; the server fills them from the data plane's
// (limits.max_request_header_bytes, timeouts.request_head, timeouts.keepalive_idle) and
// admin.max_connections.

#include <cstddef>
#include <cstdint>

#include "proxy/event/dispatcher.h"

namespace ferry::admin {

struct AdminLimits {
  uint32_t max_connections = 16;
  uint32_t max_head_bytes = 60 * 1024;
  event::Millis head_timeout{10'000};
  event::Millis idle_timeout{60'000};
  // Answers written but not read by the client; past it the next request waits.
  size_t max_pending_output = 1024 * 1024;
};

}  // namespace ferry::admin
