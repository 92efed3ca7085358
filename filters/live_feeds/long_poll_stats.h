#pragma once
// What the long-poll filter counts (docs/metrics.md, "Live feeds"): long-polls sent again
// because their upstream failed before its head, by cause; those that ran out of the client's
// wait; waiters that joined another's upstream long-poll (live_feeds.share); and waiters that
// left a collapsed long-poll to read on their own (its answer over live_feeds.subscriber_buffer,
// or cut). Created once by the composition root; shared, read-only, by every worker's filters
// (relaxed atomics).

#include <string_view>

#include "proxy/stats/stats.h"

namespace ferry::filters {

class LongPollStats {
 public:
  explicit LongPollStats(stats::Store& store);
  // An upstream long-poll is sent again; `cause`: "retry_after" (a 503 with Retry-After),
  // "bad_gateway" / "gateway_timeout" (a proxy's 502 / 504) or the failure's kind
  // (upstream::failureKindName).
  void resent(std::string_view cause);
  // The client's wait ran out before an upstream answered: it got the last failure's answer.
  stats::Counter& resend_failures;
  stats::Counter& collapsed;
  stats::Counter& detached;

 private:
  stats::Store& store_;
};

}  // namespace ferry::filters
