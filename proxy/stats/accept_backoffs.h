#pragma once
// ferry_accept_backoffs_total{listener}: one family counted by two modules, the data listener
// (server::ServerStats, listener="data") and the admin listener (admin::AdminStats,
// listener="admin"). Both register it through this function, so its help text is written once
// (docs/metrics.md, "Where a metric lives").

#include <string_view>

#include "proxy/stats/stats.h"

namespace ferry::stats {

// The series for `listener`: accept() failed for want of descriptors (EMFILE/ENFILE) and the
// listener paused briefly. The same Counter on every call with the same `listener`.
Counter& acceptBackoffsCounter(Store& store, std::string_view listener);

}  // namespace ferry::stats
