#include "proxy/upstream/upstream_client.h"

#include "proxy/http/http1/codec_factory.h"
#include "proxy/upstream/http1_conn_pool.h"

namespace ferry::upstream {

UpstreamClient::UpstreamClient(Http1ConnPool& pool, net::ConnectionPtr connection,
                               size_t high_watermark)
    : pool_(pool), connection_(std::move(connection)) {
  codec_ = http::http1::createClientCodec(connection_->output());
  connection_->setCallbacks(*this);
  connection_->setWriteWatermark(high_watermark);
  connection_->setReadLimit(high_watermark);
  release_timer_ = pool.dispatcher_.createTimer([this] {
    if (!closed_ && user_ == nullptr) pool_.onClientIdle(*this);
  });
}

UpstreamClient::~UpstreamClient() = default;

http::RequestEncoder& UpstreamClient::startRequest(http::ResponseDecoder& decoder,
                                                   ClientUser& user) {
  timer_->disable();
  user_ = &user;
  ++requests_;
  return codec_->newStream(decoder);
}

void UpstreamClient::release(bool request_complete) {
  user_ = nullptr;
  if (closed_) return;
  if (request_complete && codec_->keepAlive() && connection_->open()) {
    // Back to the pool on the next loop turn: we may be inside this codec's own dispatch.
    release_timer_->fireSoon();
    return;
  }
  connection_->close(net::CloseMode::NoFlush);
}

void UpstreamClient::onData(Buffer& input) {
  if (user_ == nullptr) {
    // Bytes on an idle connection: the upstream misbehaves; this connection cannot be trusted.
    input.clear();
    connection_->close(net::CloseMode::NoFlush);
    return;
  }
  if (!codec_->dispatch(input)) {
    countProtocolError(codec_->errorKind());
    ClientUser* user = user_;
    user_ = nullptr;
    uint64_t sent = codec_->requestBytesEncoded();
    connection_->close(net::CloseMode::NoFlush);
    if (user != nullptr) {
      user->onClientReset(http::UpstreamFailure::Kind::ProtocolError, sent > 0, "");
    }
  }
}

void UpstreamClient::countProtocolError(http::CodecErrorKind kind) {
  stats::ProxyStats& stats = pool_.stats_;
  switch (kind) {
    case http::CodecErrorKind::InvalidStatus: stats.upstream_invalid_status.inc(); return;
    case http::CodecErrorKind::BodyFraming: stats.upstream_body_framing_errors.inc(); return;
    case http::CodecErrorKind::ChunkLineTooLong: stats.upstream_chunk_line_too_long.inc(); return;
    default: stats.upstream_protocol_errors.inc(); return;
  }
}

void UpstreamClient::onEvent(net::ConnectionEvent event) {
  switch (event) {
    case net::ConnectionEvent::Connected:
      connected_ = true;
      pool_.onClientConnected(*this);
      return;
    case net::ConnectionEvent::ConnectFailed:
      closed_ = true;
      pool_.onClientConnectFailed(*this, connection_->tlsHandshakeFailed()
                                             ? http::UpstreamFailure::Kind::TlsHandshakeFailed
                                             : http::UpstreamFailure::Kind::ConnectFailed);
      return;
    case net::ConnectionEvent::RemoteClose:
    case net::ConnectionEvent::LocalClose: {
      closed_ = true;
      ClientUser* user = user_;
      user_ = nullptr;
      if (user != nullptr && event == net::ConnectionEvent::RemoteClose &&
          connection_->tlsHandshakeFailed()) {
        pool_.stats_.upstream_tls_handshake_failures.inc();
        user->onClientReset(http::UpstreamFailure::Kind::TlsHandshakeFailed, false,
                            connection_->tlsError());
      } else if (user != nullptr && event == net::ConnectionEvent::RemoteClose) {
        // A close-delimited response ends here; anything else was cut short. Over TLS the
        // close must be a close_notify: a truncated stream never ends a response (RFC 8446
        // section 6.1).
        if (connection_->tlsTruncated() || !codec_->onConnectionClosed()) {
          user->onClientReset(http::UpstreamFailure::Kind::Reset,
                              codec_->requestBytesEncoded() > 0, "");
        }
      }
      pool_.onClientClosed(*this);
      return;
    }
  }
}

void UpstreamClient::onAboveWriteHighWatermark() {
  if (user_ != nullptr) user_->onClientAboveWriteWatermark();
}

void UpstreamClient::onBelowWriteLowWatermark() {
  if (user_ != nullptr) user_->onClientBelowWriteWatermark();
}

}  // namespace ferry::upstream
