#pragma once
// The drain's series in /stats (server.h: the sequence; worker.cc: the deadline's outcomes).

#include "proxy/stats/stats.h"

namespace ferry::server {

struct DrainStats {
  explicit DrainStats(stats::Store& store);

  stats::Gauge& draining;           // 1 from the drain's start (/ready fails) to the exit
  stats::Counter& requests_admin;   // drains asked by admin POST /drain (repeats included)
  stats::Counter& requests_signal;  // SIGTERM / SIGINT received (repeats included)
  // Live feeds still open at the deadline, ended with a complete response: their last chunk,
  // or (a long-poll without a response yet) a 503 with Retry-After.
  stats::Counter& live_feeds_ended;
  stats::Counter& long_polls_answered;
  stats::Counter& streams_cut;  // other requests still in flight at the deadline: cut
};

}  // namespace ferry::server
