#pragma once
// The terminal filter: sends the request to its upstream target (the local instance, or the
// target of a replay) through the worker's connection pools, and hands the answer back to the
// stream. It retries once, on a fresh connection, when a reused keep-alive connection turns
// out to be closed and the upstream cannot have applied the request (RFC 9112 §9.3.1).
// Once a request is wholly sent, its upstream has `response_head_timeout` to start the answer
// (not for live feeds, see live_feed.h): a stopped owner or instance must not hold a client
// until stream_idle.

#include <memory>

#include "proxy/http/terminal_filter.h"
#include "proxy/upstream/worker_upstreams.h"

namespace ferry::filters {

struct RouterConfig {
  http::UpstreamTarget local;  // the local instance
  // From the request's last byte handed to the upstream to the final response head; 0 = none.
  event::Millis response_head_timeout{15'000};
};

class RouterFilter : public http::TerminalFilter,
                     public upstream::PoolCallbacks,
                     public http::ResponseDecoder,
                     public upstream::ClientUser {
 public:
  RouterFilter(const RouterConfig& config, upstream::WorkerUpstreams& pools,
               stats::ProxyStats& stats)
      : config_(config), pools_(pools), stats_(stats) {}

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
  void replay(const http::UpstreamTarget& target, const http::HeaderMap& extra_headers,
              Buffer& body) override;
  void pauseResponse(bool pause) override;
  void resetUpstream() override;
  bool liveFeed() const override { return live_feed_; }
  // upstream::PoolCallbacks
  void onPoolReady(upstream::UpstreamClient& client) override;
  void onPoolFailure(http::UpstreamFailure::Kind kind, std::string detail) override;
  // http::ResponseDecoder. Its onResponseHeaders overloads the filter's (the router is the
  // terminal filter: it sees responses as their decoder, not as a filter); keep both visible.
  using http::StreamFilter::onResponseHeaders;
  void onInformational(http::ResponseHeadersPtr headers) override;
  void onResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) override;
  void onResponseData(Buffer& data, bool end_stream) override;
  // upstream::ClientUser
  void onClientReset(http::UpstreamFailure::Kind kind, bool request_bytes_sent,
                     const std::string& detail) override;
  void onClientAboveWriteWatermark() override { stream_->pauseRequestBody(true); }
  void onClientBelowWriteWatermark() override { stream_->pauseRequestBody(false); }

 private:
  void startAttempt(bool fresh_only);
  void releaseClient();
  bool mayRetryOnFreshConnection(bool request_bytes_sent) const;
  // The whole request is with the upstream: the response-head clock starts.
  void onRequestSent();
  void disarmHeadTimer();
  void onResponseHeadTimeout();

  const RouterConfig& config_;
  upstream::WorkerUpstreams& pools_;
  stats::ProxyStats& stats_;
  http::TerminalFilterCallbacks* stream_ = nullptr;

  http::HeaderMap extra_headers_;     // added to the stream's request head by a replay
  http::UpstreamTarget target_;
  upstream::ConnectionPool* pool_ = nullptr;
  uint64_t pool_handle_ = 0;
  upstream::UpstreamClient* client_ = nullptr;
  http::RequestEncoder* encoder_ = nullptr;
  Buffer pending_body_;               // body waiting for a connection
  bool request_end_seen_ = false;     // the stream gave us the body's end
  bool request_end_sent_ = false;     // ... and it went to the current attempt
  bool response_started_ = false;
  bool response_complete_ = false;
  bool response_paused_ = false;
  bool attempt_reused_ = false;
  bool retried_ = false;
  bool live_feed_ = false;            // no response-head timer (live_feed.h)
  event::TimerPtr head_timer_;        // response-head timeout of the current attempt
};

class RouterFilterFactory : public http::TerminalFilterFactory {
 public:
  RouterFilterFactory(RouterConfig config, stats::ProxyStats& stats)
      : config_(std::move(config)), stats_(stats) {}
  std::unique_ptr<http::TerminalFilter> createTerminalFilter() const override {
    return std::make_unique<RouterFilter>(config_, upstream::WorkerUpstreams::current(), stats_);
  }

 private:
  RouterConfig config_;
  stats::ProxyStats& stats_;
};

}  // namespace ferry::filters
