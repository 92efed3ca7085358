#pragma once
// What the live-feeds filter counts (docs/metrics.md, "Live feeds"): upstream feeds resumed by
// the cause of their break, feeds that gave up, the event bytes it took from upstreams against
// those it delivered to clients (the difference: events held when an attempt broke, sent again
// by the resumed read; with sharing, delivered counts each subscriber's copy), and sharing. Created
// once by the composition root; shared, read-only, by every worker's filters (the counters are
// relaxed atomics).

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
  // Sharing (live_feeds.share): upstream feeds shared now, clients on them now (the two give
  // subscribers per shared feed), clients that joined one, and subscribers detached from one
  // because their client fell behind by more than live_feeds.subscriber_buffer.
  stats::Gauge& shared_feeds;
  stats::Gauge& shared_subscribers;
  stats::Counter& shared_joins;
  stats::Counter& detached_subscribers;

 private:
  stats::Store& store_;
};

}  // namespace ferry::filters
