#include "proxy/upstream/http1_client.h"

#include "proxy/http/http1/codec_factory.h"
#include "proxy/upstream/http1_conn_pool.h"

namespace ferry::upstream {

Http1Client::Http1Client(Http1ConnPool& pool, net::ConnectionPtr connection, size_t high_watermark)
    : pool_(pool), connection_(std::move(connection)) {
  codec_ = http::http1::createClientCodec(connection_->output());
  connection_->setCallbacks(*this);
  connection_->setWriteWatermark(high_watermark);
  connection_->setReadLimit(high_watermark);
  release_timer_ = pool.dispatcher_.createTimer([this] { returnToPool(); });
}

Http1Client::~Http1Client() {
  if (release_queued_) pool_.dispatcher_.cancelFlush(*this);
}

http::RequestEncoder& Http1Client::startStream(http::ResponseDecoder& decoder,
                                               http::ClientStreamCallbacks& callbacks) {
  timer_->disable();
  carrying_ = true;
  ++requests_;
  return codec_->newStream(decoder, callbacks);
}

void Http1Client::release(bool request_complete) {
  carrying_ = false;
  codec_->detachStream();
  if (closed_) return;
  if (request_complete && codec_->keepAlive() && connection_->open()) {
    // Back to the pool once the callbacks unwind: we may be inside this codec's own dispatch.
    // One return pending at most: the pool starts streams only on idle clients, so none is
    // released again before this one is back.
    if (pool_.dispatcher_.queueFlush(*this)) {
      release_queued_ = true;
    } else {
      release_timer_->fireSoon();
    }
    return;
  }
  connection_->close(net::CloseMode::NoFlush);
}

void Http1Client::flushNow() {
  release_queued_ = false;
  returnToPool();
}

void Http1Client::returnToPool() {
  if (!closed_ && !carrying_) pool_.onClientIdle(*this);
}

void Http1Client::onData(Buffer& input) {
  if (!carrying_) {
    // Bytes on an idle connection: the upstream misbehaves; this connection cannot be trusted.
    input.clear();
    connection_->close(net::CloseMode::NoFlush);
    return;
  }
  if (!codec_->dispatch(input)) {
    countProtocolError(codec_->errorKind());
    carrying_ = false;
    connection_->close(net::CloseMode::NoFlush);
    // After the pool heard of the close: the stream hears ProtocolError.
    codec_->onConnectionClosed();
  }
}

void Http1Client::countProtocolError(http::CodecErrorKind kind) {
  UpstreamStats& stats = pool_.stats_;
  switch (kind) {
    case http::CodecErrorKind::InvalidStatus:
      stats.upstream_invalid_status.inc();
      return;
    case http::CodecErrorKind::BodyFraming:
      stats.upstream_body_framing_errors.inc();
      return;
    case http::CodecErrorKind::ChunkLineTooLong:
      stats.upstream_chunk_line_too_long.inc();
      return;
    default:
      stats.upstream_protocol_errors.inc();
      return;
  }
}

void Http1Client::onEvent(net::ConnectionEvent event) {
  switch (event) {
    case net::ConnectionEvent::Connected:
      connected_ = true;
      pool_.onClientConnected(*this);
      return;
    case net::ConnectionEvent::ConnectFailed:
      closed_ = true;
      pool_.onClientConnectFailed(*this, connection_->tlsHandshakeFailed()
                                             ? UpstreamFailure::Kind::TlsHandshakeFailed
                                             : UpstreamFailure::Kind::ConnectFailed);
      return;
    case net::ConnectionEvent::RemoteClose:
    case net::ConnectionEvent::LocalClose: {
      closed_ = true;
      const bool carrying = carrying_;
      carrying_ = false;
      if (carrying && event == net::ConnectionEvent::RemoteClose &&
          connection_->tlsHandshakeFailed()) {
        tls_refused_ = true;
        pool_.stats_.upstream_tls_handshake_failures.inc();
        codec_->onConnectionLost();
      } else if (carrying && event == net::ConnectionEvent::RemoteClose) {
        // A close-delimited response ends here; anything else was cut short. Over TLS the
        // close must be a close_notify: a truncated stream never ends a response (RFC 8446
        // section 6.1).
        if (connection_->tlsTruncated()) {
          codec_->onConnectionLost();
        } else {
          codec_->onConnectionClosed();
        }
      }
      pool_.onClientClosed(*this);
      return;
    }
  }
}

void Http1Client::onAboveWriteBufferHighWatermark() {
  if (carrying_) codec_->onAboveWriteBufferHighWatermark();
}

void Http1Client::onBelowWriteBufferLowWatermark() {
  if (carrying_) codec_->onBelowWriteBufferLowWatermark();
}

}  // namespace ferry::upstream
