#pragma once
// One attempt of the router: the stream's request sent to one upstream target. It asks the
// target's pool for a stream, encodes the head (with a replay's extra headers) and the body as
// it comes, hands the response back to the router, and reports failures. Which connection
// carries it, and a retry on a fresh one when a reused connection turns out closed, are the
// pool's business (proxy/upstream/conn_pool.h). A replay is a new UpstreamRequest; the router
// ends the old one with reset().
//
// Owned by the RouterFilter, which keeps it until the router goes (it may be on the stack when
// it is let go).

#include <memory>
#include <optional>

#include "proxy/event/dispatcher.h"
#include "proxy/http/terminal_filter.h"
#include "proxy/upstream/conn_pool.h"

namespace ferry::filters {

class RouterFilter;

class UpstreamRequest : public upstream::UpstreamStreamCallbacks,
                        public upstream::RequestSource,
                        public http::ResponseDecoder {
 public:
  // `extra_headers` are set on the stream's request head (a replay's); `body` is the kept body
  // to send first (a replay's copy; empty for the first attempt).
  UpstreamRequest(RouterFilter& router, http::TerminalFilterCallbacks& stream,
                  upstream::UpstreamTarget target, const http::HeaderMap& extra_headers,
                  Buffer& body);

  // Asks `pool` for a stream. `request_end` = the stream already gave the request's end. May
  // report to the router before returning (an idle connection was ready, or a failure).
  void start(upstream::ConnectionPool& pool, bool request_end);
  // The stream's body as the client sends it.
  void sendBody(Buffer& data, bool end_stream);
  // Backpressure: the client's write buffer is above/below its watermark.
  void readDisable(bool disable);
  // The router is done with this attempt: it makes no more calls to the router.
  void reset();
  // The stream's first attempt (to the local instance, or owner routing's target) keeps the
  // client's `Expect: 100-continue`: the client waits for that target's 100. A replay, whose
  // client already had its 100 or not, drops it (also one to the local instance).
  void markFirst() { first_ = true; }
  // True while the request is with an upstream connection (not waiting for one, nor for a
  // pool-internal retry's connection).
  bool requestOnConnection() const {
    return encoder_ != nullptr && upstream_->requestBytesSent() > 0;
  }

  // upstream::UpstreamStreamCallbacks
  void onPoolReady(http::RequestEncoder& encoder, upstream::UpstreamStream& stream) override;
  void onPoolFailure(const upstream::UpstreamFailure& failure) override;
  void onStreamReset(const upstream::UpstreamFailure& failure) override;
  void onRequestSent() override;
  void onAboveWriteBufferHighWatermark() override { stream_.pauseRequestBody(true); }
  void onBelowWriteBufferLowWatermark() override { stream_.pauseRequestBody(false); }
  // upstream::RequestSource
  const http::RequestHeaders& requestHead() const override;
  bool copyRequestBody(Buffer& out) const override { return stream_.copyReplayBody(out); }
  // http::ResponseDecoder
  void onInformational(http::ResponseHeadersPtr headers) override;
  void onResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) override;
  void onResponseData(Buffer& data, bool end_stream) override;
  void onResponseTrailers(http::HeaderMap trailers) override;

 private:
  RouterFilter& router_;
  http::TerminalFilterCallbacks& stream_;
  const upstream::UpstreamTarget target_;
  // Held on the heap, and only when there are any: a HeaderMap keeps its first fields inline
  // (~800 bytes), and this object lives inside the router of every request.
  std::unique_ptr<const http::HeaderMap> extra_headers_;
  // The head as sent when it differs from the stream's (a replay's headers, an authority
  // filled in); the stream's own head is sent without a copy. Heap-held for the same reason.
  std::unique_ptr<http::RequestHeaders> head_;
  upstream::UpstreamStream* upstream_ = nullptr;  // waiting or in flight; null: none (any more)
  http::RequestEncoder* encoder_ = nullptr;       // set once the pool is ready
  Buffer pending_body_;                           // body waiting for the pool
  bool request_end_ = false;                      // the stream gave the body's end
  bool read_disabled_ = false;
  bool response_started_ = false;
  bool done_ = false;  // reset() by the router
  bool first_ = false;
};

}  // namespace ferry::filters
