#include "filters/live_feeds/shared_feed.h"

#include <algorithm>

#include "filters/live_feeds/feed_hub.h"

namespace ferry::filters {

SharedFeed::SharedFeed(FeedHub& hub, std::string key, std::unique_ptr<FeedReader> reader,
                       std::shared_ptr<const http::ResponseHeaders> head, FeedSubscriber& first)
    : hub_(hub), key_(std::move(key)), reader_(std::move(reader)), head_(std::move(head)) {
  reader_->setSink(*this);
  reader_->pause(false);  // the feed never waits for one subscriber
  hub_.stats().shared_feeds.add(1);
  add(first);
}

// Runs deferred (FeedHub::retire), possibly as the worker's dispatcher ends: touches nothing
// but its own reader (stopped already: its attempt and timer are gone).
SharedFeed::~SharedFeed() { reader_->stop(); }

void SharedFeed::add(FeedSubscriber& subscriber) {
  subscribers_.push_back(&subscriber);
  ++count_;
  hub_.stats().shared_subscribers.add(1);
  hub_.stats().shared_joins.inc();
}

void SharedFeed::remove(FeedSubscriber& subscriber) {
  auto it = std::find(subscribers_.begin(), subscribers_.end(), &subscriber);
  if (it == subscribers_.end()) return;
  if (iterating_ > 0) {
    *it = nullptr;
  } else {
    subscribers_.erase(it);
  }
  --count_;
  hub_.stats().shared_subscribers.sub(1);
  if (count_ == 0 && !retired_) retire();
}

void SharedFeed::retire() {
  retired_ = true;
  reader_->stop();
  hub_.stats().shared_feeds.sub(1);
  hub_.retire(*this);
}

template <class F>
void SharedFeed::forEachSubscriber(F f) {
  ++iterating_;
  const size_t n = subscribers_.size();  // ones added meanwhile start with the next units
  for (size_t i = 0; i < n; ++i) {
    if (subscribers_[i] != nullptr) f(*subscribers_[i]);
  }
  if (--iterating_ == 0) {
    subscribers_.erase(std::remove(subscribers_.begin(), subscribers_.end(), nullptr),
                       subscribers_.end());
  }
}

void SharedFeed::onFeedUnits(std::string_view units) {
  const FeedPosition position = *reader_->position();
  forEachSubscriber([&](FeedSubscriber& s) { s.onSharedUnits(units, position); });
  if (!retired_) hub_.onFeedAt(*this);
}

void SharedFeed::onFeedResuming() {
  forEachSubscriber([](FeedSubscriber& s) { s.onSharedResuming(); });
}

void SharedFeed::onFeedEnd() {
  // The feed is gone for every subscriber: it leaves the hub first, so no one joins it again.
  if (!retired_) retire();
  forEachSubscriber([this](FeedSubscriber& s) {
    remove(s);
    s.onSharedEnd();
  });
}

}  // namespace ferry::filters
