#pragma once
// Collapsed long-polls (docs/live-feeds.md, "Long-polls"): with live_feeds.share, long-polls a
// Streams instance could not tell apart (shareKey()) at the same read position (readPosition():
// offset and cursor) that wait at the same time share one upstream long-poll on their worker.
//
// The first waiter opens it with an InternalRequestIssuer taken from its own stream, so the
// upstream long-poll does not end when that client leaves; it ends (cancelled) when its last
// waiter leaves. It is joinable until its answer's head comes. The answer (head and body) is
// kept, up to `answer_limit` bytes of body, and given whole to every waiter at its end (each
// client's head gets its own x-request-id from its stream). An answer over the limit, or one
// cut after its head, is given to none: every waiter reads on its own (a read: safe; the data
// is there, so its own long-poll answers at once). A failure past the resends' deadline (the
// first waiter's wait) goes to every waiter.
//
// One hub per worker (a WorkerSlot value, event/worker_context.h): everything on its thread.
// Waiters are the long-poll filters of client streams; a waiter must leave() before it is
// destroyed, and is told at most once (onShared*), after which it is no longer a waiter.

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>

#include "filters/live_feeds/long_poll_read.h"
#include "filters/live_feeds/long_poll_stats.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/header_map.h"
#include "proxy/http/internal_request.h"

namespace ferry::filters {

// Implemented by the long-poll filter.
class LongPollWaiter {
 public:
  virtual ~LongPollWaiter() = default;
  // The shared answer, whole: `body` is everything after the head (may be empty).
  virtual void onSharedAnswer(const http::ResponseHeaders& head, const Buffer& body) = 0;
  virtual void onSharedFailure(const upstream::UpstreamFailure& failure) = 0;
  // The shared answer cannot be given to every waiter: read on your own.
  virtual void onSharedDetached() = 0;
};

class LongPollHub;

// One upstream long-poll and its waiters. Owned by its hub.
class CollapsedLongPoll : public LongPollRead::Sink, public event::DeferredDeletable {
 public:
  CollapsedLongPoll(LongPollHub& hub, std::string key, http::InternalRequestIssuerPtr issuer,
                    const http::RequestHeaders& request, LongPollRead::Clock::time_point deadline,
                    uint64_t answer_limit, LongPollStats& stats, event::Dispatcher& dispatcher);
  void start() { read_.start(); }
  void join(LongPollWaiter& waiter);
  // The waiter's client left; the last one cancels the upstream long-poll.
  void leave(LongPollWaiter& waiter);
  size_t waiters() const { return waiters_.size(); }

  // LongPollRead::Sink
  void onAnswerHeaders(http::ResponseHeadersPtr headers, bool end_stream) override;
  void onAnswerData(Buffer& data, bool end_stream) override;
  void onAnswerFailed(const upstream::UpstreamFailure& failure) override;
  void onAnswerCut() override;

 private:
  // Takes the next waiter off the list (so that one leaving meanwhile is not told again).
  LongPollWaiter* popWaiter();
  void deliver();
  void detachAll();
  // No waiter is owed anything any more: the hub lets it go (deferred).
  void finish();

  LongPollHub& hub_;
  const std::string key_;
  const uint64_t answer_limit_;
  LongPollStats& stats_;
  http::InternalRequestIssuerPtr issuer_;  // before read_: its requests end after the handle
  LongPollRead read_;
  std::deque<LongPollWaiter*> waiters_;
  http::ResponseHeadersPtr head_;
  bool head_end_ = false;
  Buffer body_;
  bool finished_ = false;
};

class LongPollHub {
 public:
  explicit LongPollHub(event::Dispatcher& dispatcher) : dispatcher_(dispatcher) {}
  ~LongPollHub();

  // The joinable long-poll of `key`, or null.
  CollapsedLongPoll* find(const std::string& key);
  // Opens (and starts) the upstream long-poll of `key` for `first`, with an issuer taken from
  // its stream and its request and deadline.
  CollapsedLongPoll& open(const std::string& key, http::InternalRequestIssuerPtr issuer,
                          const http::RequestHeaders& request,
                          LongPollRead::Clock::time_point deadline, uint64_t answer_limit,
                          LongPollStats& stats, LongPollWaiter& first);
  size_t size() const { return entries_.size(); }

  // From a CollapsedLongPoll: its answer came (no more joiners) / it is done.
  void unlist(const std::string& key, CollapsedLongPoll& entry);
  void release(CollapsedLongPoll& entry);

 private:
  event::Dispatcher& dispatcher_;
  std::unordered_map<std::string, CollapsedLongPoll*> joinable_;
  std::unordered_map<CollapsedLongPoll*, std::unique_ptr<CollapsedLongPoll>> entries_;
};

}  // namespace ferry::filters
