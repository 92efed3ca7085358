#pragma once
// What the admin listener refused or closed, in /stats next to the data plane's series.

#include "proxy/stats/stats.h"

namespace ferry::admin {

struct AdminStats {
  explicit AdminStats(stats::Store& store);

  stats::Gauge& connections_active;
  stats::Counter& connections_overflow;   // over admin.max_connections: 503 and close
  stats::Counter& idle_evictions;         // idle ones closed for a new one at the cap
  stats::Counter& request_head_timeouts;  // head not complete within timeouts.request_head
  stats::Counter& idle_timeouts;          // idle keep-alive closed after timeouts.keepalive_idle
  stats::Counter& parse_errors;           // 400 / 405 / 431 and close
  stats::Counter& accept_backoffs;        // accept() failed (out of descriptors): paused briefly
};

}  // namespace ferry::admin
