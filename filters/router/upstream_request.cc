#include "filters/router/upstream_request.h"

#include "filters/router/router_filter.h"

namespace ferry::filters {

namespace {
// The authority of the target ferry sends to, for a request that named none (HTTP/1.0
// without Host, or an empty Host): RFC 9112 §3.2 wants a Host in every HTTP/1.1 request, and
// as nginx does, the upstream's own name and port are the ones it answers to.
std::string authorityOf(const upstream::UpstreamTarget& target) {
  const std::string& host = target.server_name.empty() ? target.host : target.server_name;
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(target.port);
}
}  // namespace

UpstreamRequest::UpstreamRequest(RouterFilter& router, http::TerminalFilterCallbacks& stream,
                                 upstream::UpstreamTarget target,
                                 const http::HeaderMap& extra_headers, Buffer& body)
    : router_(router), stream_(stream), target_(std::move(target)) {
  if (extra_headers.size() != 0) extra_headers_ = std::make_unique<http::HeaderMap>(extra_headers);
  pending_body_.move(body);
}

void UpstreamRequest::start(upstream::ConnectionPool& pool, bool request_end) {
  request_end_ = request_end;
  // Null: a callback came first (onPoolReady set upstream_; a failure leaves none).
  upstream::UpstreamStream* waiting = pool.newStream(*this, *this, *this);
  if (waiting != nullptr) upstream_ = waiting;
}

void UpstreamRequest::onPoolReady(http::RequestEncoder& encoder, upstream::UpstreamStream& stream) {
  upstream_ = &stream;
  encoder_ = &encoder;
  if (read_disabled_) stream.readDisable(true);

  const bool end = request_end_ && pending_body_.empty();
  // The stream keeps the head for its whole life: no copy per request, only per replay.
  const http::RequestHeaders& sent = stream_.requestHeaders();
  if (extra_headers_ == nullptr && !sent.authority.empty() &&
      (first_ || !sent.headers.has("expect"))) {
    encoder.encodeHeaders(sent, end);
  } else {
    head_ = std::make_unique<http::RequestHeaders>(sent);
    if (head_->authority.empty()) {
      head_->headers.remove("host");  // empty: the encoder writes Host from the authority
      head_->authority = authorityOf(target_);
    }
    // The client already had its 100 Continue (or not): a replay never asks for another.
    if (!first_ || sent.authority.empty()) head_->headers.remove("expect");
    if (extra_headers_ != nullptr) {
      for (const auto& field : extra_headers_->fields())
        head_->headers.set(field.name, field.value);
      // A parsed head with a route's checked fields is as fit for HTTP/1 as both were
      // (set() dropped the mark; removals above keep it).
      if (sent.headers.wireSafe() && extra_headers_->wireSafe()) head_->headers.markWireSafe();
    }
    encoder.encodeHeaders(*head_, end);
  }
  // The end went with the head (the pool reports it sent), or a reset raised while writing
  // ended this attempt.
  if (end || encoder_ == nullptr) return;
  if (!pending_body_.empty() || request_end_) encoder_->encodeData(pending_body_, request_end_);
}

const http::RequestHeaders& UpstreamRequest::requestHead() const {
  return head_ != nullptr ? *head_ : stream_.requestHeaders();
}

void UpstreamRequest::sendBody(Buffer& data, bool end_stream) {
  request_end_ = request_end_ || end_stream;
  if (encoder_ != nullptr) {
    encoder_->encodeData(data, end_stream);
  } else {
    pending_body_.move(data);
  }
}

void UpstreamRequest::readDisable(bool disable) {
  read_disabled_ = disable;
  if (encoder_ != nullptr) upstream_->readDisable(disable);
}

void UpstreamRequest::reset() {
  done_ = true;
  encoder_ = nullptr;
  upstream::UpstreamStream* stream = upstream_;
  upstream_ = nullptr;
  if (stream != nullptr) stream->resetStream();
}

void UpstreamRequest::onPoolFailure(const upstream::UpstreamFailure& failure) {
  upstream_ = nullptr;
  if (!done_) router_.onUpstreamPoolFailure(failure);
}

void UpstreamRequest::onStreamReset(const upstream::UpstreamFailure& failure) {
  upstream_ = nullptr;
  encoder_ = nullptr;
  if (done_) return;
  upstream::UpstreamFailure seen = failure;
  seen.response_started = response_started_;
  router_.onUpstreamReset(seen);
}

void UpstreamRequest::onRequestSent() {
  if (!done_) router_.onUpstreamRequestSent();
}

void UpstreamRequest::onInformational(http::ResponseHeadersPtr headers) {
  if (!done_) stream_.onUpstreamInformational(std::move(headers));
}

void UpstreamRequest::onResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) {
  if (done_) return;
  response_started_ = true;
  router_.onUpstreamHeaders(std::move(headers), end_stream);
}

void UpstreamRequest::onResponseData(Buffer& data, bool end_stream) {
  if (!done_) stream_.onUpstreamData(data, end_stream);
}

void UpstreamRequest::onResponseTrailers(http::HeaderMap trailers) {
  if (!done_) stream_.onUpstreamTrailers(std::move(trailers));
}

}  // namespace ferry::filters
