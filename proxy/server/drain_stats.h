#pragma once
// The drain's series in /stats (server.h: the sequence; worker.cc: the deadline's outcomes).

#include "proxy/stats/stats.h"

namespace ferry::server {

struct DrainStats {
  explicit DrainStats(stats::Store& store);

  stats::Gauge& draining;             // 1 from the drain's start (/ready fails) to the exit
  stats::Counter& requests_admin;     // drains asked by admin POST /drain (repeats included)
  stats::Counter& requests_signal;    // SIGTERM / SIGINT received (repeats included)
  stats::Counter& live_feeds_ended;   // live feeds ended with a complete response at the deadline
  stats::Counter& streams_cut;        // other requests still in flight at the deadline: cut
};

}  // namespace ferry::server
