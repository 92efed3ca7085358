#include "filters/live_feeds/long_poll_stats.h"

#include <string>

namespace ferry::filters {
namespace {
constexpr char kResends[] = "ferry_live_feed_long_poll_resends_total";
constexpr char kResendsHelp[] =
    "Upstream long-polls sent again within the client's wait because they failed before their "
    "response head, by cause";
}  // namespace

LongPollStats::LongPollStats(stats::Store& store)
    : resend_failures(store.counter(
          "ferry_live_feed_long_poll_resend_failures_total",
          "Long-polls whose upstream failed before its head and could not be sent again within "
          "the client's wait: the client got the failure's answer")),
      collapsed(store.counter(
          "ferry_live_feed_long_polls_collapsed_total",
          "Long-polls that joined another's waiting upstream long-poll (live_feeds.share)")),
      detached(store.counter("ferry_live_feed_long_poll_waiters_detached_total",
                             "Waiters of a collapsed long-poll that read on their own: its "
                             "answer outgrew live_feeds.subscriber_buffer or was cut")),
      store_(store) {
  store.declareCounter(kResends, kResendsHelp);
}

void LongPollStats::resent(std::string_view cause) {
  store_.counter(kResends, kResendsHelp, {{"cause", std::string(cause)}}).inc();
}

}  // namespace ferry::filters
