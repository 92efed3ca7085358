#include "proxy/upstream/http2_pool_stream.h"

#include <string>

#include "proxy/upstream/http2_conn_pool.h"

namespace ferry::upstream {

using Kind = UpstreamFailure::Kind;
using http::ClientResetReason;

void Http2PoolStream::onConnectionReady(Http2Client& client) {
  client_ = &client;
  h2_ = &client.startStream(*this, *this);
  pool_.onStreamAssigned();
  if (read_disabled_) h2_->readDisable(true);
  if (!ready_) {
    ready_ = true;
    callbacks_.onPoolReady(*this, *this);
    return;
  }
  resend();
}

void Http2PoolStream::onConnectFailed(UpstreamFailure failure) { fail(failure); }

void Http2PoolStream::handOver(ConnectionPool& http1) {
  handed_over_ = true;
  // The user's decoder takes the response directly; the rest passes through this stream.
  UpstreamStream* waiting = http1.newStream(decoder_, *this, source_);
  if (waiting != nullptr && !done_) delegate_ = waiting;
}

void Http2PoolStream::resend() {
  http::http2::ClientStream* stream = h2_;
  const bool end = request_end_ && retry_body_.empty();
  stream->encodeHeaders(source_.requestHead(), end);
  if (end || h2_ != stream) return;  // reset while writing
  if (!retry_body_.empty() || request_end_) stream->encodeData(retry_body_, request_end_);
}

void Http2PoolStream::encodeHeaders(const http::RequestHeaders& headers, bool end_stream) {
  request_end_ = end_stream;
  if (h2_ != nullptr) h2_->encodeHeaders(headers, end_stream);
}

void Http2PoolStream::encodeData(Buffer& data, bool end_stream) {
  request_end_ = request_end_ || end_stream;
  if (delegate_encoder_ != nullptr) {
    delegate_encoder_->encodeData(data, end_stream);
    return;
  }
  if (h2_ == nullptr) {
    // Waiting for the retry's connection: this follows the kept body there.
    retry_body_.move(data);
    return;
  }
  h2_->encodeData(data, end_stream);
}

uint64_t Http2PoolStream::requestBytesSent() const {
  if (delegate_ != nullptr) return delegate_->requestBytesSent();
  return h2_ != nullptr ? h2_->bytesSent() : 0;
}

void Http2PoolStream::readDisable(bool disable) {
  if (delegate_ != nullptr) {
    delegate_->readDisable(disable);
    return;
  }
  if (read_disabled_ == disable) return;
  read_disabled_ = disable;
  if (h2_ != nullptr) h2_->readDisable(disable);
}

void Http2PoolStream::releaseConnection() {
  http::http2::ClientStream* stream = h2_;
  Http2Client* client = client_;
  h2_ = nullptr;
  client_ = nullptr;
  if (stream != nullptr) stream->detach();
  if (client != nullptr) {
    pool_.onStreamDone();
    client->onStreamDone();
  }
}

void Http2PoolStream::resetStream() {
  if (done_) return;
  done_ = true;
  if (delegate_ != nullptr) {
    UpstreamStream* delegate = delegate_;
    delegate_ = nullptr;
    delegate_encoder_ = nullptr;
    delegate->resetStream();
  }
  releaseConnection();
  pool_.destroyStream(*this);
}

bool Http2PoolStream::prepareRetry() {
  if (retried_ || response_started_) return false;
  retry_body_.clear();
  if (!source_.copyRequestBody(retry_body_)) {
    retry_body_.clear();
    return false;
  }
  return true;
}

void Http2PoolStream::onStreamReset(ClientResetReason reason, uint32_t h2_error) {
  const bool headers_sent = h2_ != nullptr && h2_->headersSent();
  const bool tls_refused = client_ != nullptr && client_->tlsRefused();
  const std::string tls_error = tls_refused ? client_->connection().tlsError() : std::string();
  // The codec's stream is gone (it made this call): only the room goes back.
  h2_ = nullptr;
  releaseConnection();
  if (done_ || response_complete_) return;
  UpstreamStats& stats = pool_.stats_;
  UpstreamFailure failure;
  failure.kind = Kind::Reset;
  if (tls_refused) {
    // Like a refused connect: the owner saw nothing (the local 409).
    failure.kind = Kind::TlsHandshakeFailed;
    failure.request_bytes_sent = false;
    failure.detail = "owner TLS handshake failed: " + tls_error;
    fail(failure);
    return;
  }
  switch (reason) {
    case ClientResetReason::GoAwayRefused:
    case ClientResetReason::NotSent:
      if (reason == ClientResetReason::GoAwayRefused) {
        stats.owner_h2_refused_streams.inc();
      } else {
        stats.owner_h2_resets_before_send.inc();
      }
      // The owner processed nothing: sent once more, on another connection (see the header).
      if (prepareRetry()) {
        retried_ = true;
        stats.upstream_retries.inc();
        pool_.request(*this);
        return;
      }
      failure.kind = Kind::StreamRefused;
      failure.request_bytes_sent = false;
      failure.detail = reason == ClientResetReason::NotSent
                           ? "the owner's connection ended before the stream was sent"
                           : "the owner's GOAWAY left the stream unprocessed";
      break;
    case ClientResetReason::Refused:
      stats.owner_h2_refused_streams.inc();
      failure.kind = Kind::StreamRefused;
      failure.request_bytes_sent = false;
      failure.detail = "the owner refused the stream (REFUSED_STREAM)";
      break;
    case ClientResetReason::RemoteReset:
    case ClientResetReason::ProtocolError:
    case ClientResetReason::ConnectionLost:
      if (response_started_) {
        stats.owner_h2_resets_after_head.inc();
      } else if (headers_sent) {
        stats.owner_h2_resets_after_send.inc();
      } else {
        stats.owner_h2_resets_before_send.inc();
      }
      stats.upstream_resets.inc();
      failure.request_bytes_sent = headers_sent;
      if (reason == ClientResetReason::ProtocolError) {
        stats.upstream_protocol_errors.inc();
        failure.kind = Kind::ProtocolError;
        failure.detail = "malformed owner response";
      } else if (reason == ClientResetReason::RemoteReset) {
        failure.detail = "the owner reset the stream (error code " + std::to_string(h2_error) + ")";
      } else {
        failure.detail = "the owner's connection closed before the response ended";
      }
      break;
  }
  fail(failure);
}

void Http2PoolStream::removeFromPool() { pool_.destroyStream(*this); }

void Http2PoolStream::onRequestSent() {
  if (!done_) callbacks_.onRequestSent();
}

// ---- From the HTTP/1.1 stream it was handed to.

void Http2PoolStream::onPoolReady(http::RequestEncoder& encoder, UpstreamStream& stream) {
  delegate_ = &stream;
  if (done_) return;
  if (ready_) {
    // A retry that was waiting when the owner turned out to speak HTTP/1.1: the user encodes
    // into this stream already, so the request goes from what was kept, and the rest of the
    // body follows through encodeData.
    delegate_encoder_ = &encoder;
    const bool end = request_end_ && retry_body_.empty();
    encoder.encodeHeaders(source_.requestHead(), end);
    if (!end && delegate_encoder_ != nullptr && (!retry_body_.empty() || request_end_)) {
      encoder.encodeData(retry_body_, request_end_);
    }
    return;
  }
  ready_ = true;
  callbacks_.onPoolReady(encoder, *this);
}

void Http2PoolStream::onPoolFailure(const UpstreamFailure& failure) {
  delegate_ = nullptr;
  delegate_encoder_ = nullptr;
  fail(failure);
}

void Http2PoolStream::onStreamReset(const UpstreamFailure& failure) {
  delegate_ = nullptr;
  delegate_encoder_ = nullptr;
  fail(failure);
}

}  // namespace ferry::upstream
