#include "filters/router/router_filter.h"

#include "filters/router/live_feed.h"

namespace ferry::filters {

namespace {
// RFC 9110 §9.2.2.
bool isIdempotent(const std::string& method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "TRACE" ||
         method == "PUT" || method == "DELETE";
}

// The authority of the target ferry sends to, for a request that named none (HTTP/1.0
// without Host, or an empty Host): RFC 9112 §3.2 wants a Host in every HTTP/1.1 request, and
// as nginx does, the upstream's own name and port are the ones it answers to.
std::string authorityOf(const http::UpstreamTarget& target) {
  const std::string& host = target.server_name.empty() ? target.host : target.server_name;
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(target.port);
}
}  // namespace

http::FilterStatus RouterFilter::onRequestHeaders(http::RequestHeaders& headers, bool end_stream) {
  request_end_seen_ = end_stream;
  live_feed_ = isLiveFeed(headers.method, headers.path);
  target_ = config_.local;
  startAttempt(false);
  return http::FilterStatus::Continue;
}

http::FilterStatus RouterFilter::onRequestBody(Buffer& data, bool end_stream) {
  request_end_seen_ = request_end_seen_ || end_stream;
  if (encoder_ != nullptr) {
    request_end_sent_ = end_stream;
    encoder_->encodeData(data, end_stream);
    if (end_stream) onRequestSent();
  } else {
    pending_body_.move(data);
  }
  return http::FilterStatus::Continue;
}

void RouterFilter::startAttempt(bool fresh_only) {
  disarmHeadTimer();
  response_started_ = false;
  response_complete_ = false;
  request_end_sent_ = false;
  pool_ = &pools_.pool(target_);
  pool_handle_ = pool_->newStream(*this, fresh_only);
}

void RouterFilter::onPoolReady(upstream::UpstreamClient& client) {
  pool_handle_ = 0;
  client_ = &client;
  encoder_ = &client.startRequest(*this, *this);
  attempt_reused_ = client.reused();
  if (response_paused_) client_->readDisable(true);

  bool end = request_end_seen_ && pending_body_.empty();
  // The stream keeps the head for its whole life: no copy per request, only per replay.
  const http::RequestHeaders& sent = stream_->requestHeaders();
  if (extra_headers_.size() == 0 && !sent.authority.empty()) {
    encoder_->encodeHeaders(sent, end);
  } else {
    http::RequestHeaders headers = sent;
    if (headers.authority.empty()) {
      headers.headers.remove("host");  // empty: the encoder writes Host from the authority
      headers.authority = authorityOf(target_);
    }
    // The client already had its 100 Continue (or not): a replay never asks for another.
    headers.headers.remove("expect");
    for (const auto& field : extra_headers_.fields()) headers.headers.set(field.name, field.value);
    encoder_->encodeHeaders(headers, end);
  }
  if (end) {
    request_end_sent_ = true;
    onRequestSent();
    return;
  }
  if (!pending_body_.empty() || request_end_seen_) {
    // `encoder_` may be cleared by a reset raised while writing; keep the flag first.
    request_end_sent_ = request_end_seen_;
    encoder_->encodeData(pending_body_, request_end_seen_);
    if (request_end_seen_) onRequestSent();
  }
}

void RouterFilter::onRequestSent() {
  // A reset raised while writing ended this attempt (or started a retry, which arms its own).
  if (encoder_ == nullptr || !request_end_sent_ || response_started_ || live_feed_) return;
  if (config_.response_head_timeout.count() == 0) return;
  if (!head_timer_) head_timer_ = callbacks_->dispatcher().createTimer([this] {
    onResponseHeadTimeout();
  });
  head_timer_->enable(config_.response_head_timeout);
}

void RouterFilter::disarmHeadTimer() {
  if (head_timer_) head_timer_->disable();
}

void RouterFilter::onResponseHeadTimeout() {
  if (client_ == nullptr || response_started_) return;
  if (response_paused_) {
    // Ferry stopped reading this upstream (the client's buffer is full): a head may be
    // waiting unread. Not the upstream's silence; look again later.
    head_timer_->enable(config_.response_head_timeout);
    return;
  }
  // Every request byte is with the upstream and no answer came: it may have applied the
  // request (an owner: 503 forward_failed; the local instance: 504), so no retry.
  stats_.upstream_response_head_timeouts.inc();
  http::UpstreamFailure failure;
  failure.kind = http::UpstreamFailure::Kind::ResponseHeadTimeout;
  failure.request_bytes_sent = true;
  failure.detail = "no response head within " +
                   std::to_string(config_.response_head_timeout.count()) + " ms";
  releaseClient();  // the response is not complete: the connection is closed, not pooled
  stream_->onUpstreamFailure(failure);
}

void RouterFilter::onPoolFailure(http::UpstreamFailure::Kind kind, std::string detail) {
  pool_handle_ = 0;
  http::UpstreamFailure failure;
  failure.kind = kind;
  failure.detail = std::move(detail);
  stream_->onUpstreamFailure(failure);
}

void RouterFilter::onInformational(http::ResponseHeadersPtr headers) {
  stream_->onUpstreamInformational(std::move(headers));
}

void RouterFilter::onResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) {
  disarmHeadTimer();
  response_started_ = true;
  response_complete_ = end_stream;
  stream_->onUpstreamHeaders(std::move(headers), end_stream);
}

void RouterFilter::onResponseData(Buffer& data, bool end_stream) {
  response_complete_ = end_stream;
  stream_->onUpstreamData(data, end_stream);
}

bool RouterFilter::mayRetryOnFreshConnection(bool request_bytes_sent) const {
  if (!attempt_reused_ || retried_ || response_started_) return false;
  if (!request_bytes_sent) return true;
  // The upstream may have read it; only a request that is safe to repeat and fully held goes
  // again.
  return isIdempotent(stream_->requestHeaders().method) && request_end_seen_ &&
         stream_->requestReplayable();
}

void RouterFilter::onClientReset(http::UpstreamFailure::Kind kind, bool request_bytes_sent,
                                 const std::string& detail) {
  using Kind = http::UpstreamFailure::Kind;
  client_ = nullptr;
  encoder_ = nullptr;
  disarmHeadTimer();
  if (response_complete_) return;
  // A refused TLS handshake is a failed connect, not a reset of a connection in use.
  if (kind != Kind::TlsHandshakeFailed) stats_.upstream_resets.inc();
  if (kind == Kind::Reset && mayRetryOnFreshConnection(request_bytes_sent)) {
    retried_ = true;
    stats_.upstream_retries.inc();
    pending_body_.clear();
    stream_->copyReplayBody(pending_body_);
    startAttempt(true);
    return;
  }
  http::UpstreamFailure failure;
  failure.kind = kind;
  failure.request_bytes_sent = request_bytes_sent;
  failure.response_started = response_started_;
  failure.detail = kind == Kind::ProtocolError        ? "malformed upstream response"
                   : kind == Kind::TlsHandshakeFailed ? "upstream TLS handshake failed: " + detail
                                                      : "upstream connection closed before the "
                                                        "response ended";
  stream_->onUpstreamFailure(failure);
}

void RouterFilter::replay(const http::UpstreamTarget& target, const http::HeaderMap& extra_headers,
                          Buffer& body) {
  resetUpstream();
  target_ = target;
  extra_headers_ = extra_headers;
  pending_body_.clear();
  pending_body_.move(body);
  retried_ = false;
  startAttempt(false);
}

void RouterFilter::pauseResponse(bool pause) {
  if (pause == response_paused_) return;
  response_paused_ = pause;
  if (client_ != nullptr) client_->readDisable(pause);
}

void RouterFilter::resetUpstream() {
  disarmHeadTimer();
  if (pool_handle_ != 0 && pool_ != nullptr) {
    pool_->cancel(pool_handle_);
    pool_handle_ = 0;
  }
  releaseClient();
}

void RouterFilter::releaseClient() {
  if (client_ == nullptr) return;
  upstream::UpstreamClient* client = client_;
  client_ = nullptr;
  encoder_ = nullptr;
  if (response_paused_) client->readDisable(false);
  client->release(request_end_sent_ && response_complete_);
}

}  // namespace ferry::filters
