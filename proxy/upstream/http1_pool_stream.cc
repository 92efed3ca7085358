#include "proxy/upstream/http1_pool_stream.h"

#include "proxy/upstream/http1_conn_pool.h"

namespace ferry::upstream {

using Kind = UpstreamFailure::Kind;

namespace {
// RFC 9110 §9.2.2.
bool isIdempotent(const std::string& method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "TRACE" ||
         method == "PUT" || method == "DELETE";
}
}  // namespace

void Http1PoolStream::onConnectionReady(Http1Client& client) {
  client_ = &client;
  ++attempt_;
  encoder_ = &client.startStream(*this, *this);
  reused_ = client.reused();
  if (read_disabled_) client.readDisable(true);
  if (!ready_) {
    ready_ = true;
    callbacks_.onPoolReady(*this, *this);
    return;
  }
  resend();
}

void Http1PoolStream::onConnectFailed(UpstreamFailure failure) { fail(failure); }

void Http1PoolStream::resend() {
  const uint32_t attempt = attempt_;
  const bool end = request_end_ && retry_body_.empty();
  encoder_->encodeHeaders(source_.requestHead(), end);
  if (end) return;
  if (attempt != attempt_ || encoder_ == nullptr) return;  // reset while writing
  if (!retry_body_.empty() || request_end_) encoder_->encodeData(retry_body_, request_end_);
}

void Http1PoolStream::onRequestSent() {
  // From the codec of the connection carrying it, which stops calling once it was reset or
  // let go (a retry's connection reports its own end).
  if (!done_) callbacks_.onRequestSent();
}

void Http1PoolStream::encodeHeaders(const http::RequestHeaders& headers, bool end_stream) {
  request_end_ = end_stream;
  if (encoder_ != nullptr) encoder_->encodeHeaders(headers, end_stream);
}

void Http1PoolStream::encodeData(Buffer& data, bool end_stream) {
  request_end_ = request_end_ || end_stream;
  if (encoder_ == nullptr) {
    // Waiting for the retry's connection: this follows the kept body there.
    retry_body_.move(data);
    return;
  }
  encoder_->encodeData(data, end_stream);
}

void Http1PoolStream::readDisable(bool disable) {
  read_disabled_ = disable;
  if (client_ != nullptr) client_->readDisable(disable);
}

void Http1PoolStream::resetStream() {
  if (done_) return;
  done_ = true;
  if (client_ != nullptr) {
    Http1Client* client = client_;
    client_ = nullptr;
    encoder_ = nullptr;
    if (read_disabled_) client->readDisable(false);
    client->release(request_end_ && response_complete_);
  }
  pool_.destroyStream(*this);
}

bool Http1PoolStream::prepareRetry(bool request_bytes_sent) {
  if (!reused_ || retried_ || response_started_) return false;
  // Once a byte left, the upstream may have read it: only a request that is safe to repeat
  // and fully held goes again.
  if (request_bytes_sent && !(isIdempotent(source_.requestHead().method) && request_end_)) {
    return false;
  }
  retry_body_.clear();
  const bool kept = source_.copyRequestBody(retry_body_);
  if (request_bytes_sent && !kept) {
    retry_body_.clear();
    return false;
  }
  return true;
}

void Http1PoolStream::onStreamReset(http::ClientResetReason reason, uint32_t) {
  // What the connection knows, read before letting go of it (it is deleted deferred, after
  // this call). A refused TLS handshake: the upstream processed nothing, whatever was written.
  const bool tls_refused = client_->tlsRefused();
  const Kind kind = reason == http::ClientResetReason::ProtocolError ? Kind::ProtocolError
                    : tls_refused                                    ? Kind::TlsHandshakeFailed
                                                                     : Kind::Reset;
  const bool request_bytes_sent = !tls_refused && client_->requestBytesSent() > 0;
  const std::string detail = tls_refused ? client_->connection().tlsError() : std::string();
  client_ = nullptr;
  encoder_ = nullptr;
  if (done_ || response_complete_) return;
  UpstreamStats& stats = pool_.stats_;
  // A refused TLS handshake is a failed connect, not a reset of a connection in use.
  if (kind != Kind::TlsHandshakeFailed) stats.upstream_resets.inc();
  if (kind == Kind::Reset && prepareRetry(request_bytes_sent)) {
    retried_ = true;
    stats.upstream_retries.inc();
    pool_.request(*this, true);
    return;
  }
  UpstreamFailure failure;
  failure.kind = kind;
  failure.request_bytes_sent = request_bytes_sent;
  failure.detail = kind == Kind::ProtocolError        ? "malformed upstream response"
                   : kind == Kind::TlsHandshakeFailed ? "upstream TLS handshake failed: " + detail
                                                      : "upstream connection closed before the "
                                                        "response ended";
  fail(failure);
}

void Http1PoolStream::removeFromPool() { pool_.destroyStream(*this); }

}  // namespace ferry::upstream
