#pragma once
// Live SSE feeds that survive a hand-over or an owner's failure (docs/live-feeds.md, "Resume").
//
// For a client's live SSE read (a GET the configured rules name), the filter stops the request
// and issues it as an internal request (http/internal_request.h), which runs the listener's
// normal path (owner routing, the local 409 and the forward, the router). It becomes the
// source of the client's response (StreamFilterCallbacks::sendResponseHeaders/Data):
// - a first answer that is not a 200 event stream goes to the client unchanged, and that is all;
// - a feed's body is cut into whole events (SseEventFramer): a data event reaches the client
//   only with the control frame that gives its end offset;
// - when the upstream's feed ends without the stream's own end (`streamClosed`), or breaks
//   (reset, owner died, timeout), the filter reads again from the last delivered control
//   frame's offset and cursor (resumeTarget()), after `Retry-After` (503 shard_moving) or a
//   backoff (ResumeSchedule), and continues the same client response; past
//   live_feeds.resume_deadline the response ends at the event boundary it is at.
// A request whose first attempt fails before any answer gets the answer a client would get
// without the filter (the router's failure policy). Never for other methods (reads only).
//
// One filter per client stream, on its worker; owned by the stream's filter chain. The config
// is shared by every worker (immutable); the stats are relaxed atomics.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "filters/live_feeds/live_feeds_stats.h"
#include "filters/live_feeds/resume_schedule.h"
#include "filters/live_feeds/sse_event_framer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/filter.h"
#include "proxy/http/internal_request.h"

namespace ferry::filters {

struct LiveFeedsConfig {
  std::chrono::milliseconds resume_deadline{30'000};
  // Which requests this filter serves: live SSE reads by the upstream's URL conventions, and not
  // ones another ferry forwarded (that ferry resumes them), as the composition root says
  // (Streams': app/streams_live_feeds.h). Only GETs are ever asked.
  std::function<bool(const http::RequestHeaders&)> is_sse_feed;
  LiveFeedsStats* stats = nullptr;  // owned by the composition root; outlives every filter
};

class LiveFeedsFilter : public http::StreamFilter, public http::InternalResponseCallbacks {
 public:
  explicit LiveFeedsFilter(const LiveFeedsConfig& config) : config_(config) {}

  // http::StreamFilter
  http::FilterStatus onRequestHeaders(http::RequestHeaders& headers, bool end_stream) override;
  void onResponseWatermark(bool above) override;
  bool onEndLiveFeed() override;
  void onDestroy() override;

  // http::InternalResponseCallbacks (the current attempt's answer)
  void onInternalResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) override;
  void onInternalResponseData(Buffer& data, bool end_stream) override;
  void onInternalRequestFailed(const upstream::UpstreamFailure& failure) override;
  void onInternalResponseReset(const upstream::UpstreamFailure* failure) override;

 private:
  enum class Mode {
    Waiting,      // the first attempt has not answered yet
    PassThrough,  // the first answer was not a feed: it goes to the client as it is
    Feed,         // the client's feed runs (or is being resumed)
    Done,         // the client's response ended
  };
  void startAttempt();
  // The first answer of a resumed read: the feed runs again, or this attempt failed.
  void onResumeAnswer(http::ResponseHeadersPtr headers);
  // The feed's upstream ended or broke while the client is there: read again later, or give up.
  void onFeedBroken(std::string_view cause, std::string_view retry_after = {});
  // Ends the client's response at the last delivered event (a complete response).
  void endFeed();
  void deliver(std::string_view bytes);

  const LiveFeedsConfig& config_;
  Mode mode_ = Mode::Waiting;
  // The client's request as it reached this filter; only for a feed it serves (a head is large:
  // every other request creates this filter too).
  std::unique_ptr<http::RequestHeaders> request_;
  http::InternalRequestPtr attempt_;
  bool resuming_ = false;  // the current attempt is a resumed read
  bool paused_ = false;    // the client's write buffer is above its high watermark
  SseEventFramer framer_;
  ResumeSchedule schedule_{config_.resume_deadline};
  event::TimerPtr resume_timer_;
  uint32_t resumes_ = 0;
};

class LiveFeedsFilterFactory : public http::FilterFactory {
 public:
  explicit LiveFeedsFilterFactory(LiveFeedsConfig config) : config_(std::move(config)) {}
  http::StreamFilterPtr createFilter(event::WorkerContext&) const override {
    return std::make_unique<LiveFeedsFilter>(config_);
  }

 private:
  const LiveFeedsConfig config_;
};

}  // namespace ferry::filters
