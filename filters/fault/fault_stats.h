#pragma once
// Fault injection's counters on /stats (docs/metrics.md): what it injected. Created by the
// composition root when fault injection is enabled (the families exist only then); the filter
// counts through a pointer in its shared config. Relaxed atomics: workers count without a lock.

#include "proxy/stats/stats.h"

namespace ferry::filters {

struct FaultStats {
  explicit FaultStats(stats::Store& store);
  stats::Counter& aborts;  // requests answered with fault.abort.status (after a delay too)
  stats::Counter& delays;  // requests held for fault.delay.duration
};

}  // namespace ferry::filters
