#pragma once
// One request/response exchange on a downstream connection: it ties the codec's stream, the
// filter chain (filter_chain.h: iteration both ways, what a stopped filter holds), the replay
// buffer (replay_buffer.h) and the terminal filter together, owns the stream's timers, answers
// locally when asked, writes the access log record (stream_log_record.h gathers it) and reports
// when it is done. What an upstream failure nobody claimed becomes for the client is the
// terminal filter's policy (the router's).
//
// Life: created by the ConnectionManager when the codec starts a stream (HTTP/1.1: one at a
// time; HTTP/2: as many as the client opens); receives the request from the codec
// (RequestDecoder), stream events from the codec (StreamCallbacks: a client reset, its own
// write watermarks) and the answer from the router (TerminalFilterCallbacks), or from a filter
// that answers itself (sendResponseHeaders: the router is then not used); ends complete,
// cut (the codec resets this stream only) or reset by the client; then the ConnectionManager
// deletes it (deferred).

#include <memory>
#include <optional>
#include <vector>

#include "proxy/access_log/access_log.h"
#include "proxy/access_log/stream_info.h"
#include "proxy/buffer/buffer.h"
#include "proxy/event/activity_timer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/http/filter.h"
#include "proxy/http/filter_chain.h"
#include "proxy/http/pause_reasons.h"
#include "proxy/http/replay_buffer.h"
#include "proxy/http/request_identity.h"
#include "proxy/http/stream_log_record.h"
#include "proxy/http/terminal_filter.h"
#include "proxy/stats/proxy_stats.h"

namespace ferry::http {

struct InternalRequestOrigin;

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
  RequestIdentityConfig identity;                     // x-request-id, X-Forwarded-*
};

class ActiveStream;
class InternalStreams;

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
  // The stream is an internal request (internal_stream.h): its head comes with its identity.
  virtual bool internalRequest() const { return false; }
  // The upstream attempt failed and no filter claimed it: before the response started the
  // terminal filter answers next (its failure policy); after (failure.response_started) the
  // stream cuts the response. An internal request's filter hears the failure itself.
  virtual void onUpstreamFailureNotClaimed(const UpstreamFailure& failure) {}
};

class ActiveStream : public RequestDecoder,
                     public StreamCallbacks,
                     public TerminalFilterCallbacks,
                     public FilterChainCallbacks,
                     public event::DeferredDeletable {
 public:
  // `worker`: the context of the worker the stream runs on (its dispatcher, and what the
  // filter factories find there); owned by the worker, outlives the stream.
  ActiveStream(StreamOwner& owner, ResponseEncoder& encoder, event::WorkerContext& worker,
               const StreamConfig& config, stats::ProxyStats& stats);
  ~ActiveStream() override;

  // RequestDecoder (from the codec)
  void onRequestHeaders(RequestHeadersPtr headers, bool end_stream) override;
  void onRequestData(Buffer& data, bool end_stream) override;

  // StreamCallbacks (from the codec)
  void onStreamReset(StreamResetReason reason) override;
  // The client reads slowly / caught up: the router stops / resumes reading the response.
  void onAboveWriteBufferHighWatermark() override;
  void onBelowWriteBufferLowWatermark() override;

  // From the connection manager: the connection closed before the response ended.
  void onDownstreamReset();
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
  // - Retry503: no response head yet (a long-poll still waiting, or a live read a filter holds
  //   and serves with internal requests, TerminalFilter::isLiveFeed): a 503 with Retry-After,
  //   an answer the client retries elsewhere, instead of a connection closed on its request;
  // - None: not a live feed, or one that cannot end cleanly (Content-Length, a held response).
  // A response a filter is the source of (sendResponseHeaders) is asked instead: LastChunk when
  // the filter ended it at a boundary of its own (StreamFilter::onEndLiveFeed), else None.
  enum class LiveFeedEnd { None, LastChunk, Retry503 };
  LiveFeedEnd endLiveFeed();

  // StreamFilterCallbacks
  event::Dispatcher& dispatcher() override { return dispatcher_; }
  const RequestHeaders& requestHeaders() const override { return *request_headers_; }
  void continueRequest() override { chain_.continueRequest(); }
  void continueResponse() override;
  bool requestReplayable() const override { return replay_body_.replayable(); }
  const UpstreamTarget& localTarget() const override { return terminal_->localTarget(); }
  bool replay(const UpstreamRoute& route) override;
  void sendUpstreamFailureReply(const UpstreamFailure& failure) override {
    terminal_->sendUpstreamFailureReply(failure);  // through sendLocalReply, as any answer
  }
  access_log::StreamInfo& streamInfo() override { return log_record_.info(); }
  // A filter as the response's source (filter.h; the "Filter-sourced response" section of
  // active_stream.cc).
  bool sendResponseHeaders(ResponseHeadersPtr headers, bool end_stream) override;
  bool sendResponseData(Buffer& data, bool end_stream) override;
  // Internal requests (internal_stream.h): this stream keeps those it issued and ends them when
  // it ends.
  InternalRequestPtr startInternalRequest(RequestHeadersPtr head, bool end_stream,
                                          InternalResponseCallbacks& callbacks) override;
  InternalRequestIssuerPtr newInternalRequestIssuer() override;
  bool internalRequest() const override { return owner_.internalRequest(); }

  // TerminalFilterCallbacks
  void onUpstreamInformational(ResponseHeadersPtr headers) override;
  void onUpstreamHeaders(ResponseHeadersPtr headers, bool end_stream) override;
  void onUpstreamData(Buffer& data, bool end_stream) override;
  void onUpstreamTrailers(HeaderMap trailers) override;
  bool onUpstreamFailure(const UpstreamFailure& failure) override;
  void pauseRequestBody(bool pause) override;
  bool copyReplayBody(Buffer& out) const override { return replay_body_.copyTo(out); }

  // FilterChainCallbacks
  void onChainRequestHeaders(RequestHeaders& headers, bool end) override;
  void onChainRequestData(Buffer& data, bool end_stream) override;
  void onChainResponseHeaders(bool end) override;
  void onChainResponseData(Buffer& data, bool end_stream) override;
  bool streamEnded() const override { return complete_; }
  bool replayPending() const override { return replay_in_progress_; }
  bool responseStarted() const override { return response_started_; }

 private:
  // What an internal request takes from this stream; none once it has ended.
  std::optional<InternalRequestOrigin> internalRequestOrigin();
  void finish(bool cut);
  // Request-side pauses (pause_reasons.h): the encoder's reading stops with the first reason
  // and resumes when none is left.
  void pauseRequestRead(PauseReason reason);
  void resumeRequestRead(PauseReason reason);
  // A stream that paused the request body for the upstream resumes it before its end (HTTP/1.1:
  // reading the connection; the next request needs it).
  void releaseReadPause() { resumeRequestRead(PauseReason::UpstreamWriteBufferFull); }
  void writeAccessLog(std::string_view end);
  // Gives the client the request's id on every response head (RFC-less convention shared by
  // Envoy and nginx: the id the upstream saw).
  void addRequestId(HeaderMap& response_headers) const;
  void resetIdleTimer() { idle_timer_.touch(); }
  void onIdleTimeout();
  void onRequestBodyTimeout();
  void onResponseTimeout();
  void destroyFilters();
  // A filter is the response's source: the terminal filter's answer is not wanted.
  bool filterSourced() const { return chain_.responseSource() != nullptr; }
  // The client's watermark to the source; false when no filter is the source.
  bool tellSourceWatermark(bool above);
  LiveFeedEnd endSourcedResponse();

  StreamOwner& owner_;
  ResponseEncoder& encoder_;
  event::WorkerContext& worker_;  // this stream's worker (its internal requests run there)
  event::Dispatcher& dispatcher_;
  const StreamConfig& config_;
  stats::ProxyStats& stats_;
  // Before the chain: filters may ask for the body (copyReplayBody) until they are destroyed.
  ReplayBuffer replay_body_;
  std::unique_ptr<TerminalFilter> terminal_;
  FilterChain chain_;

  RequestHeadersPtr request_headers_;
  bool request_end_stream_ = false;   // the codec delivered the end of the request
  bool replay_in_progress_ = false;   // a replay's answer will replace the held response
  PauseReasons request_read_pauses_;  // why the client's request is not read now

  ResponseHeadersPtr response_headers_;
  std::unique_ptr<HeaderMap> response_trailers_;  // the upstream's; sent with the end
  bool response_started_ = false;                 // head sent to the client
  bool source_ended_ = false;  // the filter that is the response's source sent its end
  bool complete_ = false;
  bool destroyed_filters_ = false;
  StreamLogRecord log_record_;       // the access log record and completion counters
  event::ActivityTimer idle_timer_;  // timeouts.stream_idle: no byte either way
  event::ActivityTimer body_timer_;  // timeouts.request_body_idle: no request body byte (shares
                                     // idle_timer_'s dispatcher timer)
  event::TimerPtr response_timer_;
  std::unique_ptr<InternalStreams> internal_streams_;  // made by the first internal request
};

}  // namespace ferry::http
