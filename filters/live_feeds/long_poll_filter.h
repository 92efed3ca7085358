#pragma once
// Long-polls that survive an owner's failure or move, and long-polls collapsed onto one
// upstream long-poll (docs/live-feeds.md, "Long-polls").
//
// For a client's long-poll (a bodiless GET the configured rules name; never one another ferry
// forwarded here, whose client-side ferry does this), the filter stops the request and reads
// it through internal requests (http/internal_request.h), which run the listener's normal path
// (owner routing, the local 409 and the forward, the router), and answers the client with
// what they answer (StreamFilterCallbacks::sendResponseHeaders/Data):
// - its own read (LongPollRead): sent again while it fails before its head, within the
//   client's wait (its `timeout`, from when ferry got it), then the answer passes through;
// - with `share`, a long-poll that a waiting one of the same key and read position already
//   reads joins it (long_poll_hub.h) and gets the same answer; the first opens it. offset=now
//   never collapses (its position is the tail when the instance sees it).
// Past the wait the client gets what it would get without the filter (the router's failure
// answer, or the last 503 as it was).
//
// Not a filter of the chain itself: the live-feeds filter (live_feeds_filter.h) makes one for a
// long-poll and hands it every call (one filter in the chain for both kinds of live read). On
// the client stream's worker; the config is shared by every worker (immutable); the hub is the
// worker's (config.hub).

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "filters/live_feeds/long_poll_hub.h"
#include "filters/live_feeds/long_poll_read.h"
#include "filters/live_feeds/long_poll_stats.h"
#include "proxy/event/worker_context.h"
#include "proxy/http/filter.h"

namespace ferry::filters {

struct LongPollConfig {
  // Which requests are long-polls this filter serves (Streams': app/streams_live_feeds.h; not
  // one another ferry forwarded). Only bodiless GETs are ever asked.
  std::function<bool(const http::RequestHeaders&)> is_long_poll;
  bool share = false;                  // live_feeds.share: collapse identical waiting long-polls
  uint64_t answer_limit = 256 * 1024;  // live_feeds.subscriber_buffer: a collapsed answer's body
  std::vector<std::string> share_key_headers;  // live_feeds.share_key_headers
  event::WorkerSlot<LongPollHub> hub;          // allocated when `share`
  std::shared_ptr<LongPollStats> stats;        // shared by every worker's filters
};

// The key under which a long-poll may collapse: shareKey() and the read position; empty for one
// that never collapses (offset=now or cursor=now).
std::string longPollKey(const http::RequestHeaders& request,
                        const std::vector<std::string>& share_key_headers);

class LongPollFilter : public http::StreamFilter, public LongPollRead::Sink, public LongPollWaiter {
 public:
  LongPollFilter(const LongPollConfig& config, event::WorkerContext& worker)
      : config_(config), worker_(worker) {}

  // http::StreamFilter
  http::FilterStatus onRequestHeaders(http::RequestHeaders& headers, bool end_stream) override;
  void onResponseWatermark(bool above) override;
  void onDestroy() override;

  // LongPollRead::Sink (its own read)
  void onAnswerHeaders(http::ResponseHeadersPtr headers, bool end_stream) override;
  void onAnswerData(Buffer& data, bool end_stream) override;
  void onAnswerFailed(const upstream::UpstreamFailure& failure) override;
  void onAnswerCut() override;

  // LongPollWaiter (a collapsed long-poll it waits on)
  void onSharedAnswer(const http::ResponseHeaders& head, const Buffer& body) override;
  void onSharedFailure(const upstream::UpstreamFailure& failure) override;
  void onSharedDetached() override;

 private:
  void readAlone();

  const LongPollConfig& config_;
  event::WorkerContext& worker_;
  // The client's request as it reached this filter; only for a long-poll it serves.
  std::unique_ptr<http::RequestHeaders> request_;
  LongPollRead::Clock::time_point deadline_;
  std::unique_ptr<LongPollRead> read_;   // its own read
  CollapsedLongPoll* shared_ = nullptr;  // the collapsed long-poll it waits on
  bool paused_ = false;
};

}  // namespace ferry::filters
