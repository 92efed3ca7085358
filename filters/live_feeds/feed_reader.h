#pragma once
// One upstream read of a live SSE feed that resumes itself (docs/live-feeds.md, "Resume"): the
// attempts (internal requests), the framer that cuts their bodies into whole units, and the
// schedule of attempts after a break. What it reads goes to one sink: the live-feeds filter of
// one client (a feed of its own), or a shared feed that writes it to its subscribers.
//
// - A reader started with no position issues the client's request as it is; the first answer's
//   head goes to the sink (onFeedHead): a `200 text/event-stream` with a body is a feed, any
//   other answer passes through (onPassThroughData / onPassThroughCut), and a first attempt
//   that fails before any answer is onFeedFailed.
// - A reader started at a position (a subscriber detached from a shared feed) reads from there
//   and gives no head: the client already has one.
// - A feed's body reaches the sink as whole units only (SseEventFramer), each call ending at
//   position(). When the upstream ends without the stream's own end (`streamClosed`), or
//   breaks, the reader reads again from position() after a `Retry-After` or a backoff
//   (ResumeSchedule); onFeedResuming() says a break began. Past the deadline, at
//   `streamClosed`, for a frame with no position, a resumed read answered with something that
//   will not change, or with `resume` off: onFeedEnd(), after which nothing is called.
//
// Who owns what: the reader is owned by its sink's owner (a filter, or a shared feed); it owns
// its issuer (taken from a client stream: its attempts outlive that stream, so a reader can be
// handed to a shared feed) and its attempt. A sink may stop the reader from inside a callback
// (stop(): nothing is called after; the reader must still be deleted later, e.g. deferred).
// Worker thread only.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "filters/live_feeds/live_feeds_stats.h"
#include "filters/live_feeds/resume_schedule.h"
#include "filters/live_feeds/sse_event_framer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/header_map.h"
#include "proxy/http/internal_request.h"

namespace ferry::filters {

// What a FeedReader tells its owner; see the header comment for when each is called.
class FeedReaderSink {
 public:
  virtual ~FeedReaderSink() = default;
  // The first answer's head (only for a reader started with no position). `is_feed`: units
  // follow. Otherwise onPassThroughData follows unless `end_stream`.
  virtual void onFeedHead(http::ResponseHeadersPtr head, bool is_feed, bool end_stream) = 0;
  virtual void onPassThroughData(Buffer& data, bool end_stream) = 0;
  // A passed-through answer was cut after its head.
  virtual void onPassThroughCut() = 0;
  // The first attempt failed before any answer.
  virtual void onFeedFailed(const upstream::UpstreamFailure& failure) = 0;
  // Whole units, verbatim; they end at the reader's position().
  virtual void onFeedUnits(std::string_view units) = 0;
  // A break began: the reader will read again (once per break, not per attempt).
  virtual void onFeedResuming() = 0;
  // The feed ended at a unit boundary; nothing is called after.
  virtual void onFeedEnd() = 0;
};

struct FeedReaderConfig {
  bool resume = true;  // false: a break ends the feed
  std::chrono::milliseconds resume_deadline{30'000};
  LiveFeedsStats* stats = nullptr;  // owned by the composition root; outlives every reader
};

class FeedReader : public http::InternalResponseCallbacks, public event::DeferredDeletable {
 public:
  // `request`: the client's read as it reached the filter (copied). `from`: where to read
  // from; none: the request as it is. Nothing is issued before start().
  FeedReader(const FeedReaderConfig& config, http::InternalRequestIssuerPtr issuer,
             event::Dispatcher& dispatcher, const http::RequestHeaders& request,
             std::optional<FeedPosition> from, FeedReaderSink& sink);
  ~FeedReader() override;

  void start();
  // Ends the attempt and the resume timer; nothing is called back after.
  void stop();
  // The sink's client (or clients) cannot take more now / can again: stops / resumes reading
  // the upstream. Not used by a shared feed (it never waits for a subscriber).
  void pause(bool paused);
  // Another owner takes the reader (a solo read handed to a shared feed).
  void setSink(FeedReaderSink& sink) { sink_ = &sink; }

  // Where the units given so far end (none before the first control frame).
  const std::optional<FeedPosition>& position() const { return framer_.delivered(); }
  // The control frame that ends the units given so far, verbatim (empty when this reader gave
  // none: SseEventFramer::deliveredFrame()).
  const std::string& positionFrame() const { return framer_.deliveredFrame(); }
  const http::RequestHeaders& request() const { return *request_; }

  // http::InternalResponseCallbacks (the current attempt)
  void onInternalResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) override;
  void onInternalResponseData(Buffer& data, bool end_stream) override;
  void onInternalRequestFailed(const upstream::UpstreamFailure& failure) override;
  void onInternalResponseReset(const upstream::UpstreamFailure* failure) override;

 private:
  enum class Mode {
    Waiting,      // the first attempt has not answered yet
    PassThrough,  // the first answer was not a feed
    Feed,         // the feed runs (or is being resumed)
    Done,         // ended or stopped: nothing more is called
  };
  void startAttempt();
  // The upstream ended or broke: read again later, or end.
  void onBroken(std::string_view cause, std::string_view retry_after = {});
  void end();

  const FeedReaderConfig& config_;
  http::InternalRequestIssuerPtr issuer_;
  event::Dispatcher& dispatcher_;
  std::unique_ptr<http::RequestHeaders> request_;
  FeedReaderSink* sink_;
  Mode mode_;
  bool resuming_;  // the current attempt continues a feed (its head is not the client's)
  bool paused_ = false;
  http::InternalRequestPtr attempt_;
  SseEventFramer framer_;
  ResumeSchedule schedule_;
  event::TimerPtr resume_timer_;
};

}  // namespace ferry::filters
