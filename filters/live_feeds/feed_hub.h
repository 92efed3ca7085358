#pragma once
// One worker's shared live feeds (docs/live-feeds.md, "Sharing"), by share key (share_key.h):
// at most one shared feed per key, and the subscribers of that key that read on their own and
// wait to meet it at a boundary. A per-worker value (event/worker_context.h, a WorkerSlot the
// live-feeds filter factory allocates); lives as long as its worker's context. Worker thread
// only: no locks.

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "filters/live_feeds/live_feeds_stats.h"
#include "filters/live_feeds/shared_feed.h"
#include "proxy/event/dispatcher.h"

namespace ferry::filters {

class FeedHub {
 public:
  FeedHub(event::Dispatcher& dispatcher, LiveFeedsStats& stats)
      : dispatcher_(dispatcher), stats_(stats) {}
  ~FeedHub();
  FeedHub(const FeedHub&) = delete;
  FeedHub& operator=(const FeedHub&) = delete;

  // The key's shared feed, or null.
  SharedFeed* find(const std::string& key);
  // A subscriber's own read of `key` answered with a feed and the hub has none for the key:
  // the reader becomes the key's shared feed, `first` its first subscriber. Returns it.
  SharedFeed& share(const std::string& key, std::unique_ptr<FeedReader> reader,
                    std::shared_ptr<const http::ResponseHeaders> head, FeedSubscriber& first);

  // A subscriber that reads on its own (its offset is not the shared feed's) waits to meet the
  // key's shared feed; the hub offers it the feed at each of the feed's boundaries.
  void addSolo(const std::string& key, FeedSubscriber& subscriber);
  void removeSolo(const std::string& key, FeedSubscriber& subscriber);

  // From a shared feed: it delivered units up to its position(); solos standing there join.
  void onFeedAt(SharedFeed& feed);
  // From a shared feed: it has no subscriber left, or it ended. It leaves the hub now and is
  // deleted after the current callbacks unwind.
  void retire(SharedFeed& feed);

  LiveFeedsStats& stats() { return stats_; }

 private:
  struct Group {
    std::unique_ptr<SharedFeed> feed;
    std::vector<FeedSubscriber*> solos;
  };
  void eraseIfEmpty(const std::string& key);

  event::Dispatcher& dispatcher_;
  LiveFeedsStats& stats_;
  std::unordered_map<std::string, Group> groups_;
};

}  // namespace ferry::filters
