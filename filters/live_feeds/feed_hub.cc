#include "filters/live_feeds/feed_hub.h"

#include <algorithm>

namespace ferry::filters {

FeedHub::~FeedHub() {
  // The worker's context ends after its connections: every subscriber has left. What is left
  // (a feed retired in the loop's last turn is already the dispatcher's) goes now.
  groups_.clear();
}

SharedFeed* FeedHub::find(const std::string& key) {
  auto it = groups_.find(key);
  return it == groups_.end() ? nullptr : it->second.feed.get();
}

SharedFeed& FeedHub::share(const std::string& key, std::unique_ptr<FeedReader> reader,
                           std::shared_ptr<const http::ResponseHeaders> head,
                           FeedSubscriber& first) {
  Group& group = groups_[key];
  group.feed = std::make_unique<SharedFeed>(*this, key, std::move(reader), std::move(head), first);
  return *group.feed;
}

void FeedHub::addSolo(const std::string& key, FeedSubscriber& subscriber) {
  groups_[key].solos.push_back(&subscriber);
}

void FeedHub::removeSolo(const std::string& key, FeedSubscriber& subscriber) {
  auto it = groups_.find(key);
  if (it == groups_.end()) return;
  auto& solos = it->second.solos;
  solos.erase(std::remove(solos.begin(), solos.end(), &subscriber), solos.end());
  eraseIfEmpty(key);
}

void FeedHub::onFeedAt(SharedFeed& feed) {
  auto it = groups_.find(feed.key());
  if (it == groups_.end() || it->second.feed.get() != &feed || it->second.solos.empty()) return;
  // A solo that joins lets its own read go (deferred), never touching this list.
  std::vector<FeedSubscriber*> solos = it->second.solos;
  std::vector<FeedSubscriber*> stay;
  for (FeedSubscriber* solo : solos) {
    if (!solo->joinIfAt(feed)) stay.push_back(solo);
  }
  it = groups_.find(feed.key());
  if (it != groups_.end()) it->second.solos = std::move(stay);
}

void FeedHub::retire(SharedFeed& feed) {
  auto it = groups_.find(feed.key());
  if (it == groups_.end() || it->second.feed.get() != &feed) return;
  const std::string key = feed.key();
  dispatcher_.deferredDelete(std::move(it->second.feed));
  eraseIfEmpty(key);
}

void FeedHub::eraseIfEmpty(const std::string& key) {
  auto it = groups_.find(key);
  if (it != groups_.end() && !it->second.feed && it->second.solos.empty()) groups_.erase(it);
}

}  // namespace ferry::filters
