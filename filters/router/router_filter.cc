#include "filters/router/router_filter.h"

#include "filters/router/upstream_failure_reply.h"

namespace ferry::filters {

http::FilterStatus RouterFilter::onRequestHeaders(http::RequestHeaders& headers, bool end_stream) {
  request_end_seen_ = end_stream;
  live_feed_ = config_.live_feeds.matches(headers.method, headers.path);
  Buffer no_body;
  // A filter may have chosen another first target (owner routing: a learned owner).
  if (first_route_ != nullptr) {
    startAttempt(first_route_->target, first_route_->extra_headers, no_body);
  } else {
    startAttempt(config_.local, http::HeaderMap(), no_body);
  }
  return http::FilterStatus::Continue;
}

http::FilterStatus RouterFilter::onRequestBody(Buffer& data, bool end_stream) {
  request_end_seen_ = request_end_seen_ || end_stream;
  if (upstream_ != nullptr) {
    upstream_->sendBody(data, end_stream);
  } else {
    data.clear();  // the attempt ended (a failure the stream answers); the stream kept a copy
  }
  return http::FilterStatus::Continue;
}

void RouterFilter::startAttempt(const upstream::UpstreamTarget& target,
                                const http::HeaderMap& extra_headers, Buffer& body) {
  disarmHeadTimer();
  response_started_ = false;
  if (!first_attempt_.has_value()) {
    upstream_ = &first_attempt_.emplace(*this, *stream_, target, extra_headers, body);
    upstream_->markFirst();
  } else {
    replays_.push_back(
        std::make_unique<UpstreamRequest>(*this, *stream_, target, extra_headers, body));
    upstream_ = replays_.back().get();
  }
  if (response_read_pauses_.paused()) upstream_->readDisable(true);
  // The attempt may end (and be replaced) before start() returns: keep it by reference.
  UpstreamRequest& attempt = *upstream_;
  attempt.start(upstreams_.pool(target), request_end_seen_);
}

void RouterFilter::onUpstreamRequestSent() {
  if (response_started_ || live_feed_ || config_.response_head_timeout.count() == 0) return;
  if (!head_timer_) {
    head_timer_ = callbacks_->dispatcher().leaseTimer([this] { onResponseHeadTimeout(); });
  }
  head_timer_->enable(config_.response_head_timeout);
}

void RouterFilter::disarmHeadTimer() {
  if (head_timer_) head_timer_->disable();
}

void RouterFilter::onResponseHeadTimeout() {
  // The pool is sending the request again on a fresh connection: its end re-arms the clock.
  if (upstream_ == nullptr || response_started_ || !upstream_->requestOnConnection()) return;
  if (response_read_pauses_.paused()) {
    // Ferry stopped reading this upstream (the client's buffer is full): a head may be
    // waiting unread. Not the upstream's silence; look again later.
    head_timer_->enable(config_.response_head_timeout);
    return;
  }
  // Every request byte is with the upstream and no answer came: it may have applied the
  // request (an owner: 503 forward_failed; the local instance: 504), so no retry.
  stats_.upstream_response_head_timeouts.inc();
  upstream::UpstreamFailure failure;
  failure.kind = upstream::UpstreamFailure::Kind::ResponseHeadTimeout;
  failure.request_bytes_sent = true;
  failure.detail =
      "no response head within " + std::to_string(config_.response_head_timeout.count()) + " ms";
  endAttempt();  // the response is not complete: the connection is closed, not pooled
  reportFailure(failure);
}

void RouterFilter::onUpstreamHeaders(http::ResponseHeadersPtr headers, bool end_stream) {
  disarmHeadTimer();
  response_started_ = true;
  stream_->onUpstreamHeaders(std::move(headers), end_stream);
}

void RouterFilter::onUpstreamPoolFailure(const upstream::UpstreamFailure& failure) {
  reportFailure(failure);
}

void RouterFilter::onUpstreamReset(const upstream::UpstreamFailure& failure) {
  disarmHeadTimer();
  reportFailure(failure);
}

void RouterFilter::reportFailure(const upstream::UpstreamFailure& failure) {
  // The filters first (owner forwarding answers its own forwards); then the router's policy.
  if (!stream_->onUpstreamFailure(failure)) sendUpstreamFailureReply(failure);
}

void RouterFilter::sendUpstreamFailureReply(const upstream::UpstreamFailure& failure) {
  answerUpstreamFailure(*stream_, failure, stats_);
}

void RouterFilter::replay(const http::UpstreamRoute& route, Buffer& body) {
  if (!first_attempt_.has_value()) {
    first_route_ = std::make_unique<http::UpstreamRoute>(
        route);  // before the head: where the first attempt goes
    return;
  }
  resetUpstream();
  startAttempt(route.target, route.extra_headers, body);
}

void RouterFilter::pauseResponse(bool pause) {
  constexpr http::PauseReason kReason = http::PauseReason::DownstreamWriteBufferFull;
  const bool changed =
      pause ? response_read_pauses_.add(kReason) : response_read_pauses_.remove(kReason);
  if (changed && upstream_ != nullptr) upstream_->readDisable(pause);
}

void RouterFilter::resetUpstream() {
  disarmHeadTimer();
  endAttempt();
}

void RouterFilter::endAttempt() {
  if (upstream_ == nullptr) return;
  // Not deleted here: it may be on the stack (its response ended the stream).
  UpstreamRequest* attempt = upstream_;
  upstream_ = nullptr;
  attempt->reset();
}

}  // namespace ferry::filters
