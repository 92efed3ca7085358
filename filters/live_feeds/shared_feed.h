#pragma once
// One upstream SSE feed written to several clients (docs/live-feeds.md, "Sharing"): a
// FeedReader (which resumes itself across hand-overs) whose whole units go, in order, to every
// subscriber. The feed never waits for a subscriber: each writes to its own client with its own
// watermarks and leaves (detaches) when it falls too far behind.
//
// Made by the worker's FeedHub from a subscriber's own read that turned out to be a feed (the
// reader is handed over: it outlives that client); owned by the hub; deleted (deferred) when
// its last subscriber leaves or the feed ends. Worker thread only.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "filters/live_feeds/feed_reader.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/header_map.h"

namespace ferry::filters {

class FeedHub;
class SharedFeed;

// A client of shared feeds: the live-feeds filter of one client stream.
class FeedSubscriber {
 public:
  virtual ~FeedSubscriber() = default;
  // Whole units of the shared feed it is on, ending at `position`.
  virtual void onSharedUnits(std::string_view units, const FeedPosition& position) = 0;
  // The shared feed's upstream broke and is being resumed.
  virtual void onSharedResuming() = 0;
  // The shared feed ended (the stream's end, the resume deadline): the subscriber is no longer
  // on it; its client's response ends.
  virtual void onSharedEnd() = 0;
  // From the hub, for a subscriber reading on its own: `feed` (of its key) just delivered up to
  // its position(). Join it when the subscriber stands at the same position and can take
  // events now (then return true: it is on the feed and has let its own read go).
  virtual bool joinIfAt(SharedFeed& feed) = 0;
};

class SharedFeed : public FeedReaderSink, public event::DeferredDeletable {
 public:
  // `reader` has answered with a feed whose head is `head`; `first` is its first subscriber.
  SharedFeed(FeedHub& hub, std::string key, std::unique_ptr<FeedReader> reader,
             std::shared_ptr<const http::ResponseHeaders> head, FeedSubscriber& first);
  ~SharedFeed() override;

  const std::string& key() const { return key_; }
  // The head each subscriber's response starts with (its own x-request-id is added by its
  // stream).
  const std::shared_ptr<const http::ResponseHeaders>& head() const { return head_; }
  // Where the units delivered so far end; none before the first control frame.
  const std::optional<FeedPosition>& position() const { return reader_->position(); }
  // The control frame at position(), verbatim: what a direct read from there starts with
  // (empty until the feed delivered one of its own).
  const std::string& positionFrame() const { return reader_->positionFrame(); }
  size_t subscribers() const { return count_; }

  void add(FeedSubscriber& subscriber);
  // The subscriber leaves (its client left, it detached, its response ended). The last one
  // leaving retires the feed.
  void remove(FeedSubscriber& subscriber);

  // FeedReaderSink (the reader after its first answer: units, resumes, the end)
  void onFeedHead(http::ResponseHeadersPtr, bool, bool) override {}
  void onPassThroughData(Buffer& data, bool) override { data.clear(); }
  void onPassThroughCut() override {}
  void onFeedFailed(const upstream::UpstreamFailure&) override {}
  void onFeedUnits(std::string_view units) override;
  void onFeedResuming() override;
  void onFeedEnd() override;

 private:
  // Calls `f` on every subscriber present when it starts and still present when its turn comes
  // (subscribers may leave meanwhile); removals during it are compacted after.
  template <class F>
  void forEachSubscriber(F f);
  // Leaves the hub (deleted after the current callbacks unwind): no subscriber left, or ended.
  void retire();

  FeedHub& hub_;
  const std::string key_;
  std::unique_ptr<FeedReader> reader_;
  const std::shared_ptr<const http::ResponseHeaders> head_;
  std::vector<FeedSubscriber*> subscribers_;  // null: left during a forEachSubscriber
  size_t count_ = 0;
  int iterating_ = 0;
  bool retired_ = false;
};

}  // namespace ferry::filters
