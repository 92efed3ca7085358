#include "proxy/http/active_stream.h"

#include <algorithm>

#include "proxy/http/local_reply.h"

namespace ferry::http {

ActiveStream::ActiveStream(StreamOwner& owner, ResponseEncoder& encoder,
                           event::Dispatcher& dispatcher, const StreamConfig& config,
                           stats::ProxyStats& stats)
    : owner_(owner),
      encoder_(encoder),
      dispatcher_(dispatcher),
      config_(config),
      stats_(stats),
      idle_timer_(dispatcher, config.stream_idle, [this] { onIdleTimeout(); }),
      body_timer_(dispatcher, config.request_body_idle, [this] { onRequestBodyTimeout(); }) {
  filters_.reserve(config.filters.size());
  for (const auto& factory : config.filters) {
    filters_.push_back(factory->createFilter());
    filters_.back()->setCallbacks(*this);
  }
  terminal_ = config.terminal->createTerminalFilter();
  terminal_->setCallbacks(*this);
  terminal_->setTerminalCallbacks(*this);
  encoder_.setStreamCallbacks(*this);
  stats_.streams_active.add(1);
  resetIdleTimer();
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
  stats_.replay_bytes_held.sub(static_cast<int64_t>(replay_body_.length()));
  replay_body_.clear();
  for (auto& filter : filters_) filter->onDestroy();
  terminal_->onDestroy();
}

// ---- Request path ---------------------------------------------------------------------------

void ActiveStream::onRequestHeaders(RequestHeadersPtr headers, bool end_stream) {
  stats_.requests_total.inc();
  request_headers_ = std::move(headers);
  applyRequestIdentity(*request_headers_, config_.identity, owner_.downstreamAddress(),
                       owner_.downstreamTls());
  request_end_stream_ = end_stream;
  if (!owner_.tryStartStream(*this)) {
    // Over the connection's share: the head waits, and so does any body (not read further:
    // an HTTP/2 stream gets no flow-control credit meanwhile).
    waiting_for_share_ = true;
    encoder_.readDisable(true);
    return;
  }
  if (!end_stream) body_timer_.touch();
  runRequestHeaders(0);
}

void ActiveStream::onConnectionShareGranted() {
  if (complete_ || !waiting_for_share_) return;
  waiting_for_share_ = false;
  encoder_.readDisable(false);
  if (!request_end_stream_) body_timer_.touch();
  // Body that came while it waited is in request_pending_: runRequestHeaders passes it on.
  runRequestHeaders(0);
}

void ActiveStream::onRequestBodyTimeout() {
  if (complete_ || request_end_stream_) return;
  if (downstream_read_paused_ || waiting_for_share_) {
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

void ActiveStream::runRequestHeaders(int from) {
  bool end = request_end_stream_ && request_pending_.empty();
  for (int i = from; i < filterCount(); ++i) {
    FilterStatus status = filters_[i]->onRequestHeaders(*request_headers_, end);
    if (complete_) return;
    if (status != FilterStatus::Continue) {
      request_stopped_at_ = i;
      return;
    }
  }
  request_headers_passed_ = true;
  terminal_->onRequestHeaders(*request_headers_, end);
  if (end) {
    request_complete_ = true;
    return;
  }
  if (!request_pending_.empty() || request_end_stream_) {
    // Body that arrived while filter `from - 1` held the head: the filters before it saw it.
    Buffer pending = std::move(request_pending_);
    runRequestData(std::max(from - 1, 0), pending, request_end_stream_);
  }
}

void ActiveStream::onRequestData(Buffer& data, bool end_stream) {
  if (complete_) {
    data.clear();
    return;
  }
  stats_.downstream_bytes_received.inc(data.length());
  request_bytes_ += data.length();
  resetIdleTimer();
  request_end_stream_ = request_end_stream_ || end_stream;
  if (request_end_stream_) {
    body_timer_.disable();
  } else {
    body_timer_.touch();
  }
  if (waiting_for_share_) {
    request_pending_.move(data);
    return;
  }
  if (request_stopped_at_ >= 0) {
    holdRequestData(0, data, end_stream);
    return;
  }
  runRequestData(0, data, end_stream);
}

void ActiveStream::holdRequestData(int from, Buffer& data, bool end_stream) {
  // The filters before the one holding the request see the body as it arrives (they cannot
  // stop it again); it waits at the holder, which has not seen it.
  for (int i = from; i < request_stopped_at_; ++i) {
    filters_[i]->onRequestBody(data, end_stream);
    if (complete_) return;
  }
  request_pending_.move(data);
}

void ActiveStream::runRequestData(int from, Buffer& data, bool end_stream) {
  for (int i = from; i < filterCount(); ++i) {
    FilterStatus status = filters_[i]->onRequestBody(data, end_stream);
    if (complete_) return;
    if (status != FilterStatus::Continue) {
      // The holder saw this chunk; it goes on after the holder when it continues.
      request_stopped_at_ = i;
      request_seen_.move(data);
      request_seen_end_ = end_stream;
      return;
    }
  }
  sendToTerminal(data, end_stream);
}

void ActiveStream::sendToTerminal(Buffer& data, bool end_stream) {
  // Keep what goes upstream for a replay: chains shared with `data`, not copied.
  if (!replay_overflowed_ && !data.empty()) {
    if (replay_body_.length() + data.length() > config_.replay_limit) {
      replay_overflowed_ = true;
      stats_.replay_buffer_overflows.inc();
      stats_.replay_bytes_held.sub(static_cast<int64_t>(replay_body_.length()));
      replay_body_.clear();
    } else {
      if (!replay_body_.addReference(data)) replay_body_.copyFrom(data);
      stats_.replay_bytes_held.add(static_cast<int64_t>(data.length()));
    }
  }
  if (end_stream) request_complete_ = true;
  terminal_->onRequestBody(data, end_stream);
}

void ActiveStream::continueRequest() {
  if (request_stopped_at_ < 0 || complete_) return;
  int holder = request_stopped_at_;
  request_stopped_at_ = -1;
  if (!request_headers_passed_) {
    runRequestHeaders(holder + 1);
    return;
  }
  Buffer seen = std::move(request_seen_);
  Buffer later = std::move(request_pending_);
  bool seen_end = request_seen_end_;
  request_seen_end_ = false;
  runRequestData(holder + 1, seen, seen_end);
  if (seen_end || complete_ || (later.empty() && !request_end_stream_)) return;
  if (request_stopped_at_ >= 0) {
    holdRequestData(holder, later, request_end_stream_);  // held again further on
  } else {
    runRequestData(holder, later, request_end_stream_);
  }
}

void ActiveStream::pauseRequestBody(bool pause) {
  if (pause == downstream_read_paused_) return;
  downstream_read_paused_ = pause;
  if (pause) stats_.watermark_pauses_upstream.inc();
  encoder_.readDisable(pause);
}

void ActiveStream::releaseReadPause() {
  if (!downstream_read_paused_) return;
  downstream_read_paused_ = false;
  encoder_.readDisable(false);
}

bool ActiveStream::copyReplayBody(Buffer& out) const {
  if (replay_overflowed_) return false;
  out.copyFrom(replay_body_);
  return true;
}

bool ActiveStream::replayRequest(const UpstreamTarget& target, const HeaderMap& extra_headers) {
  if (replay_overflowed_ || complete_ || response_started_) return false;
  stats_.replays.inc();
  replay_in_progress_ = true;
  attempt_name_ = target.name;
  Buffer body;
  body.copyFrom(replay_body_);
  terminal_->replay(target, extra_headers, body);
  return true;
}

bool ActiveStream::routeRequest(const UpstreamTarget& target, const HeaderMap& extra_headers) {
  if (request_headers_passed_ || complete_) return false;
  first_route_ = std::make_unique<UpstreamRoute>(UpstreamRoute{target, extra_headers});
  attempt_name_ = target.name;
  return true;
}

bool ActiveStream::replayRequestToLocal() {
  if (replay_overflowed_ || complete_ || response_started_) return false;
  stats_.replays.inc();
  replay_in_progress_ = true;
  attempt_name_ = "local";
  Buffer body;
  body.copyFrom(replay_body_);
  terminal_->replayToLocal(body);
  return true;
}

// ---- Response path --------------------------------------------------------------------------

void ActiveStream::onUpstreamInformational(ResponseHeadersPtr headers) {
  if (response_started_ || replay_in_progress_ || complete_) return;
  stats_.countResponse(headers->status);
  encoder_.encodeInformational(*headers);
}

void ActiveStream::onUpstreamHeaders(ResponseHeadersPtr headers, bool end_stream) {
  if (complete_) return;
  resetIdleTimer();
  // Who answered is known only now: a replay that fails before its head leaves the first
  // answer (the held 409) as the one the client gets.
  answered_by_ = attempt_name_;
  upstream_ttfb_ = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now() - started_at_);
  if (replay_in_progress_) {
    // The new attempt answered: its response replaces the one a filter held.
    replay_in_progress_ = false;
    dropHeldResponse();
  }
  response_headers_ = std::move(headers);
  response_trailers_.reset();  // an earlier attempt's (its response was replaced)
  response_end_received_ = end_stream;
  runResponseHeaders(filterCount() - 1, end_stream);
}

void ActiveStream::onUpstreamTrailers(HeaderMap trailers) {
  if (complete_) return;
  // Kept until the response's end is encoded (the filters see only that end): they go out
  // with it, whenever a filter holding the response lets it go.
  response_trailers_ = std::make_unique<HeaderMap>(std::move(trailers));
  Buffer none;
  onUpstreamData(none, true);
}

void ActiveStream::dropHeldResponse() {
  response_held_.clear();
  response_seen_.clear();
  response_seen_end_ = false;
  response_stopped_at_ = -1;
  response_buffering_ = false;
}

void ActiveStream::runResponseHeaders(int from, bool end) {
  for (int i = from; i >= 0; --i) {
    FilterStatus status = filters_[i]->onResponseHeaders(*response_headers_, end);
    if (complete_) return;
    if (status != FilterStatus::Continue) {
      response_stopped_at_ = i;
      response_buffering_ = status == FilterStatus::StopAndBuffer;
      // Nothing more will come: the filter gets its (empty) whole body now.
      if (response_buffering_ && end && !replay_in_progress_) deliverBufferedResponse();
      return;
    }
    // The filter started a replay and let this head go: the new attempt's answer replaces it.
    if (replay_in_progress_) return;
  }
  encodeResponseHeaders(end);
}

void ActiveStream::onUpstreamData(Buffer& data, bool end_stream) {
  if (complete_) {
    data.clear();
    return;
  }
  resetIdleTimer();
  if (end_stream) response_end_received_ = true;
  if (response_stopped_at_ >= 0) {
    holdResponseData(filterCount() - 1, data, end_stream);
    if (end_stream && response_buffering_ && !complete_) deliverBufferedResponse();
    return;
  }
  runResponseData(filterCount() - 1, data, end_stream);
}

void ActiveStream::holdResponseData(int from, Buffer& data, bool end_stream) {
  // The filters nearer the upstream than the holder see the body as it arrives (they cannot
  // stop it again); it waits at the holder, which has not seen it.
  for (int i = from; i > response_stopped_at_; --i) {
    filters_[i]->onResponseBody(data, end_stream);
    if (complete_) return;
  }
  response_held_.move(data);
}

void ActiveStream::deliverBufferedResponse() {
  // StopAndBuffer: the holder gets everything it held, in order, in one call.
  response_seen_.move(response_held_);
  response_seen_end_ = true;
  FilterStatus status = filters_[response_stopped_at_]->onResponseBody(response_seen_, true);
  if (status == FilterStatus::Continue && !complete_ && !replay_in_progress_) continueResponse();
}

void ActiveStream::runResponseData(int from, Buffer& data, bool end_stream) {
  for (int i = from; i >= 0; --i) {
    FilterStatus status = filters_[i]->onResponseBody(data, end_stream);
    if (complete_) return;
    if (status != FilterStatus::Continue) {
      // The holder saw this chunk; it goes on after the holder when it continues.
      response_stopped_at_ = i;
      response_buffering_ = status == FilterStatus::StopAndBuffer;
      response_seen_.move(data);
      response_seen_end_ = end_stream;
      if (end_stream && response_buffering_) deliverBufferedResponse();
      return;
    }
  }
  encodeResponseData(data, end_stream);
}

void ActiveStream::continueResponse() {
  if (response_stopped_at_ < 0 || complete_) return;
  int holder = response_stopped_at_;
  response_buffering_ = false;
  replay_in_progress_ = false;
  Buffer seen = std::move(response_seen_);
  Buffer later = std::move(response_held_);
  bool seen_end = response_seen_end_;
  response_seen_end_ = false;
  response_stopped_at_ = -1;
  if (!response_started_) {
    runResponseHeaders(holder - 1, response_end_received_ && seen.empty() && later.empty());
    if (complete_ || !response_started_) {
      // Held again by a filter nearer the client: what the holder saw (or not) waits there.
      if (!complete_) {
        holdResponseData(holder - 1, seen, seen_end);
        holdResponseData(holder, later, response_end_received_ && !seen_end);
        if (response_end_received_ && response_buffering_) deliverBufferedResponse();
      }
      return;
    }
  }
  runResponseData(holder - 1, seen, seen_end);
  if (seen_end || complete_ || (later.empty() && !response_end_received_)) return;
  if (response_stopped_at_ >= 0) {
    holdResponseData(holder, later, response_end_received_);
  } else {
    runResponseData(holder, later, response_end_received_);
  }
}

void ActiveStream::encodeResponseHeaders(bool end_stream) {
  response_started_ = true;
  response_status_ = response_headers_->status;
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

void ActiveStream::encodeResponseData(Buffer& data, bool end_stream) {
  stats_.downstream_bytes_sent.inc(data.length());
  response_bytes_ += data.length();
  if (end_stream) releaseReadPause();
  if (end_stream && response_trailers_ != nullptr) {
    encoder_.encodeData(data, false);
    encoder_.encodeTrailers(*response_trailers_);
  } else {
    encoder_.encodeData(data, end_stream);
  }
  if (end_stream) finish(false);
}

void ActiveStream::onUpstreamFailure(const UpstreamFailure& failure) {
  if (complete_) return;
  if (response_started_) {
    stats_.responses_cut.inc();
    UpstreamFailure seen = failure;
    seen.response_started = true;
    for (int i = filterCount() - 1; i >= 0; --i) filters_[i]->onUpstreamFailure(seen);
    finish(true);
    return;
  }
  for (int i = filterCount() - 1; i >= 0; --i) {
    if (filters_[i]->onUpstreamFailure(failure)) return;
    if (complete_) return;
  }
  if (replay_in_progress_ && response_stopped_at_ >= 0) {
    // Nobody claimed the failed replay: the held response goes out as it was.
    continueResponse();
    return;
  }
  using Kind = UpstreamFailure::Kind;
  HeaderMap retry_after;
  retry_after.add("retry-after", "1");
  switch (failure.kind) {
    case Kind::ResponseHeadTimeout:
      // The request was sent whole and may have been applied: not a 503 to retry blindly.
      sendLocalReply(504, "upstream_response_timeout",
                     "the upstream did not start its response in time: " + failure.detail, {});
      return;
    case Kind::Reset:
    case Kind::ProtocolError:
      if (failure.request_bytes_sent) {
        stats_.upstream_unknown_outcome.inc();
        sendLocalReply(502, "upstream_outcome_unknown",
                       "the upstream connection failed after the request was sent; it may have "
                       "been applied",
                       {});
        return;
      }
      [[fallthrough]];
    default:
      sendLocalReply(503, "upstream_unavailable",
                     "the upstream cannot be reached: " + failure.detail, retry_after);
      return;
  }
}

void ActiveStream::sendLocalReply(int status, std::string_view code, std::string_view message,
                                  const HeaderMap& extra) {
  if (complete_) return;
  if (response_started_) {
    stats_.responses_cut.inc();
    finish(true);
    return;
  }
  dropHeldResponse();
  replay_in_progress_ = false;
  terminal_->resetUpstream();
  LocalReply reply = makeLocalReply(status, code, message, extra);
  addRequestId(reply.headers.headers);
  response_started_ = true;
  response_status_ = status;
  answered_by_.clear();  // ferry answered itself
  upstream_ttfb_ = std::chrono::microseconds(-1);
  response_bytes_ += reply.body.size();
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

void ActiveStream::onDownstreamWatermark(bool above_high) {
  if (complete_) return;
  if (above_high) stats_.watermark_pauses_downstream.inc();
  terminal_->pauseResponse(above_high);
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
  if (complete_ || response_stopped_at_ >= 0 || !terminal_->liveFeed()) return LiveFeedEnd::None;
  if (!response_started_) {
    HeaderMap retry_after;
    retry_after.add("retry-after", "1");
    sendLocalReply(503, "draining", "this proxy is shutting down; retry the request",
                   retry_after);
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

void ActiveStream::recordForward(access_log::ForwardOutcome outcome, std::string_view owner,
                                 std::string_view reason) {
  forward_ = outcome;
  forward_owner_ = std::string(owner);
  forward_reason_ = reason;
}

void ActiveStream::writeAccessLog(std::string_view end) {
  if (!request_headers_) return;
  const auto duration = std::max(std::chrono::microseconds(0),
                                 std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::system_clock::now() - started_at_));
  stats_.countCompleted(request_headers_->method, response_status_,
                        static_cast<uint64_t>(duration.count()));
  if (!config_.access_log) return;
  access_log::Entry entry;
  entry.start = started_at_;
  entry.duration = duration;
  entry.upstream_ttfb = upstream_ttfb_;
  entry.client = owner_.downstreamAddress();
  entry.method = request_headers_->method;
  entry.path = request_headers_->path;
  entry.protocol = request_headers_->protocol;
  entry.status = response_status_;
  entry.request_bytes = request_bytes_;
  entry.response_bytes = response_bytes_;
  entry.request_id = request_headers_->headers.get("x-request-id").value_or(std::string_view());
  entry.user_agent = request_headers_->headers.get("user-agent").value_or(std::string_view());
  entry.upstream = answered_by_;
  entry.forward = forward_;
  entry.forward_reason = forward_reason_;
  entry.owner = forward_owner_;
  entry.route = route_;
  entry.end = end;
  entry.peer = owner_.downstreamPeerIdentity();
  config_.access_log->write(entry);
}

}  // namespace ferry::http
