#pragma once
// What the live-feeds filter counts (docs/metrics.md, "Live feeds"): feeds resumed by the
// cause of their break, feeds that gave up, and the event bytes it took from upstreams against
// those it delivered to clients (the difference: events held when an attempt broke, sent again
// by the resumed read). Created once by the composition root; shared, read-only, by every
// worker's filters (the counters are relaxed atomics).

#include <string_view>

#include "proxy/stats/stats.h"

namespace ferry::filters {

class LiveFeedsStats {
 public:
  explicit LiveFeedsStats(stats::Store& store);
  // A feed broke and is being resumed; `cause`: "ended" (the upstream ended the response
  // without the stream's end) or an upstream failure kind (upstream::failureKindName).
  void resumed(std::string_view cause);
  // A feed could not be resumed before live_feeds.resume_deadline: its response ended.
  stats::Counter& resume_failures;
  stats::Counter& event_bytes_received;
  stats::Counter& event_bytes_delivered;

 private:
  stats::Store& store_;
};

}  // namespace ferry::filters
