#pragma once
// The terminal filter: picks where the stream's request goes (the local instance, or the route a
// filter chose: http::StreamFilterCallbacks::replay), sends it there as an UpstreamRequest
// through the worker's pools (upstream::WorkerUpstreams), and hands the answer back to the
// stream. A replay ends the current UpstreamRequest and starts a new one. Connection reuse, and
// the retry on a fresh connection when a reused one turns out closed (RFC 9112 §9.3.1), happen
// inside the pool. Once a request is wholly sent, its upstream has `response_head_timeout` to
// start the answer (not for live feeds, see live_feed.h): a stopped owner or instance must not
// hold a client until stream_idle. A failure no filter claims is answered here
// (upstream_failure_reply.h: 502, 503 or 504).
//
// Created per stream by RouterFilterFactory on the stream's worker; owned by the stream
// (http::ActiveStream), which it reaches through TerminalFilterCallbacks until onDestroy().

#include <memory>
#include <optional>
#include <vector>

#include "filters/router/live_feed.h"
#include "filters/router/router_stats.h"
#include "filters/router/upstream_request.h"
#include "proxy/http/pause_reasons.h"
#include "proxy/http/terminal_filter.h"
#include "proxy/upstream/worker_upstreams.h"

namespace ferry::filters {

struct RouterConfig {
  upstream::UpstreamTarget local;  // the local instance
  // From the request's last byte handed to the upstream to the final response head; 0 = none.
  event::Millis response_head_timeout{15'000};
  LiveFeedRules live_feeds;  // which requests are live feeds (none by default)
};

class RouterFilter : public http::TerminalFilter {
 public:
  RouterFilter(const RouterConfig& config, upstream::WorkerUpstreams& upstreams,
               const RouterStats& stats)
      : config_(config), upstreams_(upstreams), stats_(stats) {}

  // http::StreamFilter (request path)
  http::FilterStatus onRequestHeaders(http::RequestHeaders& headers, bool end_stream) override;
  http::FilterStatus onRequestBody(Buffer& data, bool end_stream) override;
  void onDestroy() override {
    resetUpstream();
    head_timer_.reset();
  }
  // http::TerminalFilter
  void setTerminalCallbacks(http::TerminalFilterCallbacks& callbacks) override {
    stream_ = &callbacks;
  }
  const upstream::UpstreamTarget& localTarget() const override { return config_.local; }
  void replay(const http::UpstreamRoute& route, Buffer& body) override;
  void pauseResponse(bool pause) override;
  void sendUpstreamFailureReply(const upstream::UpstreamFailure& failure) override;
  void resetUpstream() override;
  bool liveFeed() const override { return live_feed_; }
  bool isLiveFeed(const http::RequestHeaders& request) const override {
    return config_.live_feeds.matches(request.method, request.path);
  }

  // From the current UpstreamRequest.
  // The whole request is with the upstream: the response-head clock starts.
  void onUpstreamRequestSent();
  void onUpstreamHeaders(http::ResponseHeadersPtr headers, bool end_stream);
  // No stream could be had (nothing was sent).
  void onUpstreamPoolFailure(const upstream::UpstreamFailure& failure);
  // The stream failed before its response ended.
  void onUpstreamReset(const upstream::UpstreamFailure& failure);

 private:
  void startAttempt(const upstream::UpstreamTarget& target, const http::HeaderMap& extra_headers,
                    Buffer& body);
  // Ends the current attempt, if any.
  void endAttempt();
  // Tells the stream; answers the client when no filter did.
  void reportFailure(const upstream::UpstreamFailure& failure);
  void disarmHeadTimer();
  void onResponseHeadTimeout();

  const RouterConfig& config_;
  upstream::WorkerUpstreams& upstreams_;
  const RouterStats& stats_;
  http::TerminalFilterCallbacks* stream_ = nullptr;

  // The current attempt, or null. Attempts live as long as the router (which is deleted
  // deferred, with its stream): an ended one may still be on the stack. The first lives in
  // place (no allocation per request); a replay's is allocated.
  UpstreamRequest* upstream_ = nullptr;
  std::optional<UpstreamRequest> first_attempt_;
  std::vector<std::unique_ptr<UpstreamRequest>> replays_;
  // replay() before the head; none: local. Heap-held: a route's HeaderMap keeps its first
  // fields inline (~800 bytes), and the router is allocated for every request.
  std::unique_ptr<http::UpstreamRoute> first_route_;
  bool request_end_seen_ = false;            // the stream gave us the body's end
  bool response_started_ = false;            // the current attempt's response head came
  http::PauseReasons response_read_pauses_;  // why the upstream's response is not read now
  bool live_feed_ = false;                   // no response-head timer (live_feed.h)
  // Response-head timeout of the current attempt, leased from the dispatcher (leaseTimer: no
  // libevent add and delete per request).
  event::TimerLease head_timer_;
};

class RouterFilterFactory : public http::TerminalFilterFactory {
 public:
  // Registers the router's metrics in `store` (RouterStats). `upstreams`: the slot holding each
  // worker's pools (WorkerUpstreams::allocateSlot, by the composition root).
  RouterFilterFactory(RouterConfig config, event::WorkerSlot<upstream::WorkerUpstreams> upstreams,
                      stats::Store& store)
      : config_(std::move(config)), upstreams_(upstreams), stats_(store) {}
  // On the stream's worker: the router uses that worker's pools.
  std::unique_ptr<http::TerminalFilter> createTerminalFilter(
      event::WorkerContext& worker) const override {
    return std::make_unique<RouterFilter>(config_, worker.get(upstreams_), stats_);
  }

 private:
  RouterConfig config_;
  event::WorkerSlot<upstream::WorkerUpstreams> upstreams_;
  RouterStats stats_;
};

}  // namespace ferry::filters
