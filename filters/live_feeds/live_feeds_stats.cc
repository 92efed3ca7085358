#include "filters/live_feeds/live_feeds_stats.h"

#include <string>

namespace ferry::filters {
namespace {
constexpr char kResumes[] = "ferry_live_feed_resumes_total";
constexpr char kResumesHelp[] =
    "Live SSE feeds whose upstream broke while the client was there and that ferry resumed "
    "from the last delivered offset, by the cause of the break";
}  // namespace

LiveFeedsStats::LiveFeedsStats(stats::Store& store)
    : resume_failures(store.counter(
          "ferry_live_feed_resume_failures_total",
          "Live SSE feeds that could not be resumed before live_feeds.resume_deadline: their "
          "response ended at the last delivered event")),
      event_bytes_received(
          store.counter("ferry_live_feed_received_bytes_total",
                        "SSE feed bytes the live-feeds filter read from upstreams")),
      event_bytes_delivered(store.counter(
          "ferry_live_feed_delivered_bytes_total",
          "SSE feed bytes the live-feeds filter wrote to clients (whole events only)")),
      shared_feeds(store.gauge("ferry_live_feed_shared_feeds",
                               "Upstream SSE feeds shared by the clients of one worker now "
                               "(live_feeds.share)")),
      shared_subscribers(store.gauge("ferry_live_feed_shared_subscribers",
                                     "Clients whose feed is a shared upstream feed now")),
      shared_joins(store.counter("ferry_live_feed_shared_joins_total",
                                 "Clients that joined a shared upstream feed at an event boundary "
                                 "(a new read, or one that met the feed)")),
      detached_subscribers(store.counter(
          "ferry_live_feed_detached_subscribers_total",
          "Clients of a shared feed that fell behind by more than live_feeds.subscriber_buffer "
          "and continued on a read of their own")),
      store_(store) {
  store.declareCounter(kResumes, kResumesHelp);
}

void LiveFeedsStats::resumed(std::string_view cause) {
  // A handful of causes; the store's lookup takes a lock only to find the series.
  store_.counter(kResumes, kResumesHelp, {{"cause", std::string(cause)}}).inc();
}

}  // namespace ferry::filters
