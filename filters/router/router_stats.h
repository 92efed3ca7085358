#pragma once
// The router's own metrics (filters/router/): what it decided about an upstream attempt, as
// opposed to what the pools saw (proxy/upstream/upstream_stats.h). Shared by every worker.

#include "proxy/stats/stats.h"

namespace ferry::filters {

struct RouterStats {
  explicit RouterStats(stats::Store& store);

  stats::Counter& upstream_response_head_timeouts;  // request sent, no response head in time
  stats::Counter& upstream_unknown_outcome;  // 502: the upstream may have applied the request
};

}  // namespace ferry::filters
