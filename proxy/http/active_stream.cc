#include "proxy/http/active_stream.h"

#include <algorithm>

#include "proxy/http/internal_stream.h"
#include "proxy/http/local_reply.h"

namespace ferry::http {

ActiveStream::ActiveStream(StreamOwner& owner, ResponseEncoder& encoder,
                           event::WorkerContext& worker, const StreamConfig& config,
                           stats::ProxyStats& stats)
    : owner_(owner),
      encoder_(encoder),
      worker_(worker),
      dispatcher_(worker.dispatcher()),
      config_(config),
      stats_(stats),
      replay_body_(config.replay_limit, stats),
      terminal_(config.terminal->createTerminalFilter(worker)),
      chain_(config.filters, worker, *this, *this),
      idle_timer_(dispatcher_, config.stream_idle, [this] { onIdleTimeout(); }),
      body_timer_(idle_timer_, config.request_body_idle, [this] { onRequestBodyTimeout(); }) {
  terminal_->setCallbacks(*this);
  terminal_->setTerminalCallbacks(*this);
  encoder_.setStreamCallbacks(*this);
  stats_.streams_active.add(1);
  if (config_.response_timeout.count() > 0) {
    response_timer_ = dispatcher_.createTimer([this] { onResponseTimeout(); });
    response_timer_->enable(config_.response_timeout);
  }
}

ActiveStream::~ActiveStream() {
  destroyFilters();
  stats_.streams_active.sub(1);
}

void ActiveStream::destroyFilters() {
  if (destroyed_filters_) return;
  destroyed_filters_ = true;
  idle_timer_.disable();
  body_timer_.disable();
  if (response_timer_) response_timer_->disable();
  replay_body_.clear();
  if (internal_streams_) internal_streams_->endAll();  // before the filters that issued them
  chain_.destroy();
  terminal_->onDestroy();
}

// ---- Request path ---------------------------------------------------------------------------

void ActiveStream::onRequestHeaders(RequestHeadersPtr headers, bool end_stream) {
  stats_.requests_total.inc();
  request_headers_ = std::move(headers);
  if (!owner_.internalRequest()) {  // an internal request's head comes with its identity
    applyRequestIdentity(*request_headers_, config_.identity, owner_.downstreamAddress(),
                         owner_.downstreamTls());
  }
  request_end_stream_ = end_stream;
  chain_.setRequestHead(*request_headers_, end_stream);
  if (!owner_.tryStartStream(*this)) {
    // Over the connection's share: the head waits, and so does any body (not read further:
    // an HTTP/2 stream gets no flow-control credit meanwhile).
    resetIdleTimer();
    pauseRequestRead(PauseReason::ConnectionShare);
    return;
  }
  // The body's timer first: it arms the dispatcher timer both share at its earlier deadline,
  // which the idle timer's touch then finds armed (activity_timer.h).
  if (!end_stream) body_timer_.touch();
  resetIdleTimer();
  chain_.runRequest();
}

void ActiveStream::onConnectionShareGranted() {
  if (complete_ || !request_read_pauses_.has(PauseReason::ConnectionShare)) return;
  resumeRequestRead(PauseReason::ConnectionShare);
  if (!request_end_stream_) body_timer_.touch();
  // Body that came while it waited is with the chain: it follows the head.
  chain_.runRequest();
}

void ActiveStream::onRequestBodyTimeout() {
  if (complete_ || request_end_stream_) return;
  if (request_read_pauses_.paused()) {
    // Ferry is not reading this body (the upstream is slow to take it): not the client's stall.
    body_timer_.touch();
    return;
  }
  stats_.request_body_timeouts.inc();
  // HTTP/1.1 closes after it (the rest of the body never comes); HTTP/2 resets the request
  // side with NO_ERROR after the complete answer (RFC 9113 §8.1).
  sendLocalReply(408, "request_body_timeout",
                 "no byte of the request body arrived for " +
                     std::to_string(config_.request_body_idle.count()) + " ms",
                 {});
}

void ActiveStream::onChainRequestHeaders(RequestHeaders& headers, bool end) {
  terminal_->onRequestHeaders(headers, end);
}

void ActiveStream::onRequestData(Buffer& data, bool end_stream) {
  if (complete_) {
    data.clear();
    return;
  }
  stats_.downstream_bytes_received.inc(data.length());
  log_record_.addRequestBytes(data.length());
  resetIdleTimer();
  request_end_stream_ = request_end_stream_ || end_stream;
  if (request_end_stream_) {
    body_timer_.disable();
  } else {
    body_timer_.touch();
  }
  chain_.onRequestData(data, end_stream);  // waits there while the share holds the request
}

void ActiveStream::onChainRequestData(Buffer& data, bool end_stream) {
  replay_body_.keep(data);  // what goes upstream, kept for a replay
  terminal_->onRequestBody(data, end_stream);
}

void ActiveStream::pauseRequestBody(bool pause) {
  if (!pause) {
    resumeRequestRead(PauseReason::UpstreamWriteBufferFull);
    return;
  }
  if (request_read_pauses_.has(PauseReason::UpstreamWriteBufferFull)) return;
  stats_.downstream_read_pauses.inc();
  pauseRequestRead(PauseReason::UpstreamWriteBufferFull);
}

void ActiveStream::pauseRequestRead(PauseReason reason) {
  if (request_read_pauses_.add(reason)) encoder_.readDisable(true);
}

void ActiveStream::resumeRequestRead(PauseReason reason) {
  if (request_read_pauses_.remove(reason)) encoder_.readDisable(false);
}

bool ActiveStream::replay(const UpstreamRoute& route) {
  if (complete_ || response_started_ || filterSourced()) return false;
  Buffer body;
  if (chain_.requestHeadersPassed()) {
    if (!replay_body_.copyTo(body)) return false;
    stats_.replays.inc();
    replay_in_progress_ = true;
  }  // else: the first attempt goes there (nothing was sent, nothing to replay)
  log_record_.attemptTo(route.target.name);
  terminal_->replay(route, body);
  return true;
}

// ---- Response path --------------------------------------------------------------------------

void ActiveStream::onUpstreamInformational(ResponseHeadersPtr headers) {
  if (response_started_ || replay_in_progress_ || complete_ || filterSourced()) return;
  stats_.countResponse(headers->status);
  encoder_.encodeInformational(*headers);
}

void ActiveStream::onUpstreamHeaders(ResponseHeadersPtr headers, bool end_stream) {
  if (complete_ || filterSourced()) return;
  resetIdleTimer();
  // Who answered is known only now: a replay that fails before its head leaves the first
  // answer (the held 409) as the one the client gets.
  log_record_.upstreamAnswered();
  if (replay_in_progress_) {
    // The new attempt answered: its response replaces the one a filter held.
    replay_in_progress_ = false;
    chain_.dropHeldResponse();
  }
  response_headers_ = std::move(headers);
  response_trailers_.reset();  // an earlier attempt's (its response was replaced)
  chain_.onResponseHeaders(*response_headers_, end_stream);
}

void ActiveStream::onUpstreamTrailers(HeaderMap trailers) {
  if (complete_ || filterSourced()) return;
  // Kept until the response's end is encoded (the filters see only that end): they go out
  // with it, whenever a filter holding the response lets it go.
  response_trailers_ = std::make_unique<HeaderMap>(std::move(trailers));
  Buffer none;
  onUpstreamData(none, true);
}

void ActiveStream::onUpstreamData(Buffer& data, bool end_stream) {
  if (complete_ || filterSourced()) {
    data.clear();
    return;
  }
  resetIdleTimer();
  chain_.onResponseData(data, end_stream);
}

void ActiveStream::continueResponse() {
  // A filter lets the held response go: no replay's answer replaces it any more.
  if (chain_.responseHeld() && !complete_) replay_in_progress_ = false;
  chain_.continueResponse();
}

void ActiveStream::onChainResponseHeaders(bool end_stream) {
  response_started_ = true;
  log_record_.setStatus(response_headers_->status);
  addRequestId(response_headers_->headers);
  stats_.countResponse(response_headers_->status);
  if (end_stream) releaseReadPause();
  if (end_stream && response_trailers_ != nullptr) {
    // No body, but trailers: they end the response.
    encoder_.encodeHeaders(*response_headers_, false);
    encoder_.encodeTrailers(*response_trailers_);
  } else {
    encoder_.encodeHeaders(*response_headers_, end_stream);
  }
  if (end_stream) finish(false);
}

void ActiveStream::onChainResponseData(Buffer& data, bool end_stream) {
  stats_.downstream_bytes_sent.inc(data.length());
  log_record_.addResponseBytes(data.length());
  if (end_stream) releaseReadPause();
  if (end_stream && response_trailers_ != nullptr) {
    encoder_.encodeData(data, false);
    encoder_.encodeTrailers(*response_trailers_);
  } else {
    encoder_.encodeData(data, end_stream);
  }
  if (end_stream) finish(false);
}

bool ActiveStream::onUpstreamFailure(const UpstreamFailure& failure) {
  if (complete_ || filterSourced()) return true;
  if (response_started_) {
    stats_.responses_cut.inc();
    UpstreamFailure seen = failure;
    seen.response_started = true;
    chain_.onResponseCut(seen);
    owner_.onUpstreamFailureNotClaimed(seen);
    finish(true);
    return true;
  }
  if (chain_.claimFailure(failure)) return true;
  if (replay_in_progress_ && chain_.responseHeld()) {
    // Nobody claimed the failed replay: the held response goes out as it was.
    continueResponse();
    return true;
  }
  owner_.onUpstreamFailureNotClaimed(failure);
  return false;  // the terminal filter answers it
}

void ActiveStream::sendLocalReply(int status, std::string_view code, std::string_view message,
                                  const HeaderMap& extra) {
  if (complete_) return;
  if (response_started_) {
    stats_.responses_cut.inc();
    finish(true);
    return;
  }
  chain_.dropHeldResponse();
  replay_in_progress_ = false;
  terminal_->resetUpstream();
  LocalReply reply = makeLocalReply(status, code, message, extra);
  addRequestId(reply.headers.headers);
  response_started_ = true;
  log_record_.setStatus(status);
  log_record_.answeredLocally();
  log_record_.addResponseBytes(reply.body.size());
  stats_.countResponse(status);
  releaseReadPause();
  encoder_.encodeHeaders(reply.headers, false);
  Buffer body;
  body.add(reply.body);
  encoder_.encodeData(body, true);
  finish(false);
}

void ActiveStream::onIdleTimeout() {
  if (complete_) return;
  stats_.stream_idle_timeouts.inc();
  sendLocalReply(504, "stream_timeout", "no bytes moved on this request in time", {});
}

void ActiveStream::onResponseTimeout() {
  // timeouts.response (whole response) has its own counter and code: it is not an idle stream.
  if (complete_) return;
  stats_.response_timeouts.inc();
  sendLocalReply(504, "response_timeout", "the response did not complete in time", {});
}

void ActiveStream::onAboveWriteBufferHighWatermark() {
  if (complete_ || tellSourceWatermark(true)) return;
  stats_.upstream_read_pauses.inc();
  terminal_->pauseResponse(true);
}

void ActiveStream::onBelowWriteBufferLowWatermark() {
  if (complete_ || tellSourceWatermark(false)) return;
  terminal_->pauseResponse(false);
}

void ActiveStream::onDownstreamReset() {
  if (complete_) return;
  complete_ = true;
  stats_.downstream_resets.inc();
  terminal_->resetUpstream();
  destroyFilters();
  writeAccessLog("client_left");
}

ActiveStream::LiveFeedEnd ActiveStream::endLiveFeed() {
  // A response a filter holds has not reached the client: it cannot be ended there.
  if (complete_ || chain_.responseHeld()) return LiveFeedEnd::None;
  if (filterSourced()) return endSourcedResponse();
  // A live read a filter holds (it serves it with internal requests) is one as the router's.
  const bool live = chain_.requestHeadersPassed()
                        ? terminal_->liveFeed()
                        : request_headers_ != nullptr && terminal_->isLiveFeed(*request_headers_);
  if (!live) return LiveFeedEnd::None;
  if (!response_started_) {
    HeaderMap retry_after;
    retry_after.add("retry-after", "1");
    sendLocalReply(503, "draining", "this proxy is shutting down; retry the request", retry_after);
    return LiveFeedEnd::Retry503;
  }
  if (!encoder_.canEndEarly()) return LiveFeedEnd::None;
  releaseReadPause();
  Buffer empty;
  encoder_.encodeData(empty, true);
  finish(false);
  return LiveFeedEnd::LastChunk;
}

void ActiveStream::finish(bool cut) {
  if (complete_) return;
  complete_ = true;
  if (cut) {
    // HTTP/2 resets this stream alone; HTTP/1.1 can only close the connection.
    releaseReadPause();
    encoder_.resetStream();
  }
  terminal_->resetUpstream();
  destroyFilters();
  writeAccessLog(cut ? "cut" : "ok");
  owner_.onStreamComplete(*this, cut);
}

void ActiveStream::onStreamReset(StreamResetReason reason) {
  // The client reset this stream (HTTP/2 RST_STREAM) or broke the protocol on it: as if it
  // left, but the connection and its other streams live on.
  if (complete_) return;
  onDownstreamReset();
  owner_.onStreamComplete(*this, true);
}

// ---- Filter-sourced response (filter.h: sendResponseHeaders) ---------------------------------
// The filter's head and body enter the response path where the terminal filter's would, one
// filter earlier (FilterChain::takeResponseSource), and go to the client through the same
// onChainResponse* calls: request id, counters, activity and the access log are the same.

bool ActiveStream::sendResponseHeaders(ResponseHeadersPtr headers, bool end_stream) {
  if (complete_ || response_started_ || headers == nullptr) return false;
  if (!chain_.takeResponseSource()) return false;  // a second head, or not the request's holder
  replay_in_progress_ = false;
  if (chain_.requestHeadersPassed()) {
    // The request had reached the terminal filter: end its attempt, and nothing upstream
    // holds the client's body back any more.
    terminal_->resetUpstream();
    releaseReadPause();
  }
  response_trailers_.reset();
  log_record_.answeredLocally();  // no upstream answered this response
  source_ended_ = end_stream;
  resetIdleTimer();
  response_headers_ = std::move(headers);
  chain_.onResponseHeaders(*response_headers_, end_stream);
  return true;
}

bool ActiveStream::sendResponseData(Buffer& data, bool end_stream) {
  if (complete_ || !filterSourced() || source_ended_) return false;
  source_ended_ = end_stream;
  resetIdleTimer();  // a live response's bytes are activity, as the router's are
  chain_.onResponseData(data, end_stream);
  return true;
}

bool ActiveStream::tellSourceWatermark(bool above) {
  StreamFilter* source = chain_.responseSource();
  if (source == nullptr) return false;
  source->onResponseWatermark(above);
  return true;
}

ActiveStream::LiveFeedEnd ActiveStream::endSourcedResponse() {
  // Its head still held by a filter before it (checked by the caller) or not sent: nothing of
  // it reached the client, and a cut says as much. A Content-Length body (HTTP/1.1) cannot end
  // before its length: the filter is not asked.
  if (!response_started_ || !encoder_.canEndEarly()) return LiveFeedEnd::None;
  const bool ended = chain_.responseSource()->onEndLiveFeed();
  // It may say it ended while a filter before it still holds the end: then it did not.
  return ended && complete_ ? LiveFeedEnd::LastChunk : LiveFeedEnd::None;
}

void ActiveStream::addRequestId(HeaderMap& headers) const {
  if (!request_headers_) return;
  auto id = request_headers_->headers.get(kRequestIdHeader);
  if (!id) return;
  const bool wire_safe = headers.wireSafe();  // the id is checked visible ASCII
  if (headers.has(kRequestIdHeader)) {
    headers.set(kRequestIdHeader, std::string(*id));
  } else {
    headers.add(kRequestIdHeader, *id);  // the usual case: one copy, no second scan
  }
  if (wire_safe) headers.markWireSafe();
}

// ---- Internal requests (internal_stream.h) ---------------------------------------------------

std::optional<InternalRequestOrigin> ActiveStream::internalRequestOrigin() {
  if (complete_ || destroyed_filters_ || !request_headers_) return std::nullopt;
  const HeaderMap& fields = request_headers_->headers;
  InternalRequestOrigin origin;
  origin.request_id = std::string(fields.get(kRequestIdHeader).value_or(""));
  origin.x_forwarded_for = std::string(fields.get("x-forwarded-for").value_or(""));
  origin.x_forwarded_proto = std::string(fields.get("x-forwarded-proto").value_or(""));
  origin.client_address = std::string(owner_.downstreamAddress());
  origin.peer_identity = std::string(owner_.downstreamPeerIdentity());
  origin.tls = owner_.downstreamTls();
  return origin;
}

InternalRequestPtr ActiveStream::startInternalRequest(RequestHeadersPtr head, bool end_stream,
                                                      InternalResponseCallbacks& callbacks) {
  std::optional<InternalRequestOrigin> origin = internalRequestOrigin();
  if (!origin || !head) return nullptr;
  if (!internal_streams_) {
    internal_streams_ = std::make_unique<InternalStreams>(worker_, config_, stats_);
  }
  return internal_streams_->start(std::move(*origin), std::move(head), end_stream, callbacks);
}

InternalRequestIssuerPtr ActiveStream::newInternalRequestIssuer() {
  std::optional<InternalRequestOrigin> origin = internalRequestOrigin();
  if (!origin) return nullptr;
  return std::make_unique<OwnedInternalStreams>(worker_, config_, stats_, std::move(*origin));
}

void ActiveStream::writeAccessLog(std::string_view end) {
  if (!request_headers_) return;
  access_log::AccessLog* log = config_.access_log.get();
  // The client's address and identity only for a record to write (a virtual call each through
  // the owner): with no access log they were looked up for nothing on every request.
  log_record_.write(
      *request_headers_, end, log != nullptr ? owner_.downstreamAddress() : std::string_view(),
      log != nullptr ? owner_.downstreamPeerIdentity() : std::string_view(), stats_, log);
}

}  // namespace ferry::http
