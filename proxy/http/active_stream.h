#pragma once
// One request/response exchange on a downstream connection: it runs the filter chain both ways,
// keeps the request body it passed upstream for a replay (shared, not copied, up to the replay
// limit), holds a response a filter stopped, and reports when it is done.
//
// Life: created by the ConnectionManager when the codec starts a stream (HTTP/1.1: one at a
// time; HTTP/2: as many as the client opens); receives the request from the codec
// (RequestDecoder), stream events from the codec (StreamCallbacks: a client reset, its own
// write watermarks) and the answer from the router (TerminalFilterCallbacks); ends complete,
// cut (the codec resets this stream only) or reset by the client; then the ConnectionManager
// deletes it (deferred).

#include <memory>
#include <vector>

#include "proxy/access_log/access_log.h"
#include "proxy/buffer/buffer.h"
#include "proxy/event/activity_timer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/http/filter.h"
#include "proxy/http/request_identity.h"
#include "proxy/http/terminal_filter.h"
#include "proxy/stats/proxy_stats.h"

namespace ferry::http {

// Immutable per-listener settings and filter factories, shared by all workers.
struct StreamConfig {
  uint32_t replay_limit = 64 * 1024;
  event::Millis stream_idle{300'000};
  // A request body that is due (head read, end not yet) and moves no byte this long while
  // ferry reads it: 408 (or the stream cut once the response started). 0 = none.
  event::Millis request_body_idle{15'000};
  event::Millis response_timeout{0};  // 0 = none
  std::vector<std::shared_ptr<const FilterFactory>> filters;
  std::shared_ptr<const TerminalFilterFactory> terminal;
  std::shared_ptr<access_log::AccessLog> access_log;  // null: no access log
  RequestIdentityConfig identity;  // x-request-id, X-Forwarded-*
};

class ActiveStream;

// Implemented by the connection manager.
class StreamOwner {
 public:
  virtual ~StreamOwner() = default;
  // `stream` ended: its response is complete, or was cut (`cut`: ferry reset the stream, or
  // the client did). It may be deleted after the call returns. Not called when the owner
  // ended the stream itself (onDownstreamReset).
  virtual void onStreamComplete(ActiveStream& stream, bool cut) = 0;
  // The client's verified TLS certificate identity (empty without one).
  virtual std::string_view downstreamPeerIdentity() const { return {}; }
  // The client's address, "ip:port" or "[ip6]:port" (empty when unknown).
  virtual std::string_view downstreamAddress() { return {}; }
  // The client connection uses TLS (X-Forwarded-Proto: https).
  virtual bool downstreamTls() const { return false; }
  // The stream's request head is complete: may it run now (the connection's fair share,
  // connection_share.h)? False: it waits until its onConnectionShareGranted().
  virtual bool tryStartStream(ActiveStream& stream) { return true; }
};

class ActiveStream : public RequestDecoder,
                     public StreamCallbacks,
                     public TerminalFilterCallbacks,
                     public event::DeferredDeletable {
 public:
  ActiveStream(StreamOwner& owner, ResponseEncoder& encoder, event::Dispatcher& dispatcher,
               const StreamConfig& config, stats::ProxyStats& stats);
  ~ActiveStream() override;

  // RequestDecoder (from the codec)
  void onRequestHeaders(RequestHeadersPtr headers, bool end_stream) override;
  void onRequestData(Buffer& data, bool end_stream) override;

  // StreamCallbacks (from the codec)
  void onStreamReset(StreamResetReason reason) override;
  void onAboveWriteHighWatermark() override { onDownstreamWatermark(true); }
  void onBelowWriteLowWatermark() override { onDownstreamWatermark(false); }

  // From the connection manager: the connection closed before the response ended.
  void onDownstreamReset();
  void onDownstreamWatermark(bool above_high);  // the client reads slowly / caught up
  // Answers directly (codec errors, overload) before any filter ran.
  void sendLocalReply(int status, std::string_view code, std::string_view message,
                      const HeaderMap& extra) override;
  bool complete() const { return complete_; }
  // The connection's share lets this stream's request run now (it waited: tryStartStream()).
  void onConnectionShareGranted();
  // Drain deadline, for a live feed (long-poll, SSE) still open; the upstream attempt is
  // cancelled either way:
  // - LastChunk: its response head went out and its framing lets it end now (a last chunk, or
  //   the close), so it ends as a complete response and the client resumes from its offset;
  // - Retry503: no response head yet (a long-poll still waiting): a 503 with Retry-After, an
  //   answer the client retries elsewhere, instead of a connection closed on its request;
  // - None: not a live feed, or one that cannot end cleanly (Content-Length, a held response).
  enum class LiveFeedEnd { None, LastChunk, Retry503 };
  LiveFeedEnd endLiveFeed();

  // StreamFilterCallbacks
  event::Dispatcher& dispatcher() override { return dispatcher_; }
  const RequestHeaders& requestHeaders() const override { return *request_headers_; }
  void continueRequest() override;
  void continueResponse() override;
  bool requestReplayable() const override { return !replay_overflowed_; }
  std::string_view downstreamPeerIdentity() const override {
    return owner_.downstreamPeerIdentity();
  }
  bool replayRequest(const UpstreamTarget& target, const HeaderMap& extra_headers) override;
  bool routeRequest(const UpstreamTarget& target, const HeaderMap& extra_headers) override;
  bool replayRequestToLocal() override;
  void recordRoute(std::string_view outcome) override { route_ = outcome; }
  void recordForward(access_log::ForwardOutcome outcome, std::string_view owner,
                     std::string_view reason) override;

  // TerminalFilterCallbacks
  void onUpstreamInformational(ResponseHeadersPtr headers) override;
  void onUpstreamHeaders(ResponseHeadersPtr headers, bool end_stream) override;
  void onUpstreamData(Buffer& data, bool end_stream) override;
  void onUpstreamTrailers(HeaderMap trailers) override;
  void onUpstreamFailure(const UpstreamFailure& failure) override;
  void pauseRequestBody(bool pause) override;
  bool copyReplayBody(Buffer& out) const override;
  bool requestComplete() const override { return request_complete_; }
  const UpstreamRoute* firstRoute() const override { return first_route_.get(); }

 private:
  int filterCount() const { return static_cast<int>(filters_.size()); }
  // Request path: runs filters from `from` on; the terminal filter gets what passes.
  void runRequestHeaders(int from);
  void runRequestData(int from, Buffer& data, bool end_stream);
  // While a filter holds the request: filters from `from` up to the holder see `data`, which
  // then waits at the holder.
  void holdRequestData(int from, Buffer& data, bool end_stream);
  void sendToTerminal(Buffer& data, bool end_stream);
  // Response path: runs filters from `from` down to 0, then encodes to the client.
  // `end` = the response has no body left to deliver after its head.
  void runResponseHeaders(int from, bool end);
  void runResponseData(int from, Buffer& data, bool end_stream);
  // A response held by StopAndBuffer is complete: its filter gets the whole body.
  void deliverBufferedResponse();
  // While a filter holds the response: filters from `from` down to the holder see `data`,
  // which then waits at the holder.
  void holdResponseData(int from, Buffer& data, bool end_stream);
  void dropHeldResponse();
  void encodeResponseHeaders(bool end_stream);
  void encodeResponseData(Buffer& data, bool end_stream);
  void finish(bool cut);
  // A stream that paused the request body resumes it before its end (HTTP/1.1: reading the
  // connection; the next request needs it).
  void releaseReadPause();
  void writeAccessLog(std::string_view end);
  // Gives the client the request's id on every response head (RFC-less convention shared by
  // Envoy and nginx: the id the upstream saw).
  void addRequestId(HeaderMap& response_headers) const;
  void resetIdleTimer() { idle_timer_.touch(); }
  void onIdleTimeout();
  void onRequestBodyTimeout();
  void onResponseTimeout();
  void destroyFilters();

  StreamOwner& owner_;
  ResponseEncoder& encoder_;
  event::Dispatcher& dispatcher_;
  const StreamConfig& config_;
  stats::ProxyStats& stats_;
  std::vector<StreamFilterPtr> filters_;
  std::unique_ptr<TerminalFilter> terminal_;

  RequestHeadersPtr request_headers_;
  bool request_end_stream_ = false;  // the codec delivered the end of the request
  bool request_complete_ = false;    // the end went past every filter to the router
  int request_stopped_at_ = -1;      // filter that stopped the request path, -1 = none
  bool request_headers_passed_ = false;
  Buffer request_pending_;           // body waiting at the holder, not yet seen by it
  Buffer request_seen_;              // the chunk the holder stopped on (it saw it)
  bool request_seen_end_ = false;

  // Replay copy of the body the router was given (references, not copies).
  Buffer replay_body_;
  bool replay_overflowed_ = false;
  bool replay_in_progress_ = false;
  bool downstream_read_paused_ = false;

  ResponseHeadersPtr response_headers_;
  std::unique_ptr<HeaderMap> response_trailers_;  // the upstream's; sent with the end
  int response_stopped_at_ = -1;     // filter holding the response, -1 = none
  bool response_buffering_ = false;  // StopAndBuffer: hold data until the end
  bool response_end_received_ = false;
  Buffer response_held_;             // body waiting at the holder, not yet seen by it
  Buffer response_seen_;             // body the holder saw (the chunk it stopped on, or all)
  bool response_seen_end_ = false;
  bool response_started_ = false;    // head sent to the client
  bool complete_ = false;
  bool destroyed_filters_ = false;
  // For the access log.
  std::chrono::system_clock::time_point started_at_ = std::chrono::system_clock::now();
  uint64_t request_bytes_ = 0;
  uint64_t response_bytes_ = 0;
  int response_status_ = 0;
  std::string attempt_name_ = "local";  // the upstream the current attempt goes to
  std::string answered_by_;             // the upstream whose response head was taken; empty:
                                        // none (a local reply, or nothing came)
  std::chrono::microseconds upstream_ttfb_{-1};  // start -> that response head
  access_log::ForwardOutcome forward_ = access_log::ForwardOutcome::None;
  std::string forward_owner_;
  std::string_view forward_reason_;  // a static name (skipReasonName)
  std::string_view route_;           // owner routing's outcome, a static name; empty: none
  std::unique_ptr<UpstreamRoute> first_route_;  // routeRequest(); null: the local instance
  event::ActivityTimer idle_timer_;             // timeouts.stream_idle: no byte either way
  event::ActivityTimer body_timer_;             // timeouts.request_body_idle: no request body byte
  bool waiting_for_share_ = false;              // the head is read; the connection's share holds it
  event::TimerPtr response_timer_;
};

}  // namespace ferry::http
