#include "proxy/upstream/http2_client.h"

#include "proxy/upstream/http2_conn_pool.h"

namespace ferry::upstream {

using Kind = UpstreamFailure::Kind;

Http2Client::Http2Client(Http2ConnPool& pool, net::ConnectionPtr connection)
    : pool_(pool), connection_(std::move(connection)) {
  connection_->setCallbacks(*this);
  connection_->setWriteWatermark(pool.settings_.high_watermark);
  connection_->setReadLimit(pool.settings_.high_watermark);
  // Many streams' users write to this one connection: what they encode in one loop pass
  // leaves in one write.
  connection_->setWriteBatching(true);
  event::Dispatcher& dispatcher = pool.dispatcher_;
  connect_timer_ = dispatcher.createTimer([this] {
    pool_.stats_.upstream_connect_timeouts.inc();
    state_ = State::Closed;
    pool_.onClientConnectFailed(*this, Kind::ConnectTimeout, "owner connect timed out");
  });
  idle_timer_ = dispatcher.createTimer([this] {
    if (active_ == 0) drain();
  });
  ping_timer_ = dispatcher.createTimer([this] { onPingTimer(); });
  ping_timeout_timer_ = dispatcher.createTimer([this] {
    // No PING ack in time: the owner (or the path to it) is gone.
    pool_.stats_.owner_h2_ping_timeouts.inc();
    close();
  });
  check_timer_ = dispatcher.createTimer([this] { check(); });
  connect_timer_->enable(pool.settings_.connect_timeout);
}

Http2Client::~Http2Client() = default;

net::ConnectionPtr Http2Client::takeConnection() {
  connect_timer_->disable();
  state_ = State::Closed;
  connection_->setWriteBatching(false);  // one request at a time from here on
  return std::move(connection_);
}

void Http2Client::start() {
  // Ready once the owner's SETTINGS arrive (its preface, RFC 9113 §3.4): only then is its
  // SETTINGS_MAX_CONCURRENT_STREAMS known, which says when a second connection is due. The
  // connect timeout runs until then.
  counted_ = true;
  pool_.stats_.owner_connections_active_h2.add(1);
  codec_ = std::make_unique<http::http2::Http2ClientCodec>(
      connection_->output(), *this, pool_.codec_settings_,
      pool_.target_.scheme == "https" ? "https" : "http", &pool_.dispatcher_);
  last_read_ = std::chrono::steady_clock::now();
  ping_timer_->enable(pool_.settings_.h2_ping_interval);
}

http::http2::ClientStream& Http2Client::startStream(http::ResponseDecoder& decoder,
                                                    http::ClientStreamCallbacks& callbacks) {
  ++active_;
  ++carried_;
  idle_timer_->disable();
  return codec_->newStream(decoder, callbacks);
}

void Http2Client::onStreamDone() {
  if (active_ > 0) --active_;
  if (state_ == State::Closed && active_ == 0) {
    pool_.reap(*this);
    return;
  }
  scheduleCheck();
}

void Http2Client::scheduleCheck() {
  if (state_ != State::Closed) check_timer_->fireSoon();
}

void Http2Client::check() {
  if (state_ == State::Ready) {
    pool_.assignPending();
    if (active_ == 0 && state_ == State::Ready && !idle_timer_->enabled()) {
      idle_timer_->enable(pool_.settings_.idle_timeout);
    }
    return;
  }
  if (state_ == State::Draining && active_ == 0) close();
}

void Http2Client::drain() {
  if (state_ != State::Ready) return;
  state_ = State::Draining;
  idle_timer_->disable();
  if (active_ == 0) {
    // Idle: tell the owner (GOAWAY NO_ERROR), then close once it is written.
    codec_->goAway();
    state_ = State::Closed;
    connection_->close(net::CloseMode::FlushWrite);
  }
}

void Http2Client::close() {
  if (connection_ == nullptr || (state_ == State::Closed && !connection_->open())) return;
  state_ = State::Closed;
  if (connection_->open()) connection_->close(net::CloseMode::NoFlush);
}

uint32_t Http2Client::capacity() const {
  const uint32_t cap = pool_.settings_.h2_max_streams_per_connection;
  if (codec_ == nullptr) return cap;
  const uint32_t remote = codec_->remoteMaxConcurrentStreams();
  return remote < cap ? remote : cap;
}

void Http2Client::onData(Buffer& input) {
  last_read_ = std::chrono::steady_clock::now();
  if (codec_ == nullptr) {
    input.drain(input.length());
    return;
  }
  if (!codec_->dispatch(input)) {
    pool_.stats_.upstream_protocol_errors.inc();
    if (state_ == State::Connecting) {
      // A broken preface: a failed connect, which fails the waiters (another connection for
      // them would meet the same owner).
      state_ = State::Closed;
      pool_.onClientConnectFailed(*this, Kind::ConnectFailed,
                                  "owner's HTTP/2 preface was malformed: " + codec_->errorDetail());
      return;
    }
    // A connection error (the codec queued GOAWAY and told its streams): close once the
    // GOAWAY is written.
    state_ = State::Closed;
    connection_->close(net::CloseMode::FlushWrite);
  }
}

void Http2Client::onEvent(net::ConnectionEvent event) {
  switch (event) {
    case net::ConnectionEvent::Connected:
      pool_.onClientConnected(*this);
      return;
    case net::ConnectionEvent::ConnectFailed: {
      connect_timer_->disable();
      state_ = State::Closed;
      const bool tls = connection_->tlsHandshakeFailed();
      if (tls)
        pool_.stats_.upstream_tls_handshake_failures.inc();
      else
        pool_.stats_.upstream_connect_failures.inc();
      pool_.onClientConnectFailed(*this, tls ? Kind::TlsHandshakeFailed : Kind::ConnectFailed,
                                  tls ? "owner TLS handshake failed: " + connection_->tlsError()
                                      : "owner refused the connection");
      return;
    }
    case net::ConnectionEvent::RemoteClose:
    case net::ConnectionEvent::LocalClose: {
      const bool was_connecting = state_ == State::Connecting;
      connect_timer_->disable();
      idle_timer_->disable();
      ping_timer_->disable();
      ping_timeout_timer_->disable();
      check_timer_->disable();
      state_ = State::Closed;
      if (event == net::ConnectionEvent::RemoteClose && connection_->tlsHandshakeFailed()) {
        tls_refused_ = true;
        pool_.stats_.upstream_tls_handshake_failures.inc();
      }
      if (was_connecting) {
        // Closed before the owner's SETTINGS (no stream was on it; the owner closed, or sent
        // no PING ack): a failed connect, which fails the waiters rather than opening another
        // connection for them (TLS 1.3: the owner refused our client certificate after the
        // handshake).
        if (!tls_refused_) pool_.stats_.upstream_connect_failures.inc();
        pool_.onClientConnectFailed(
            *this, tls_refused_ ? Kind::TlsHandshakeFailed : Kind::ConnectFailed,
            tls_refused_ ? "owner TLS handshake failed: " + connection_->tlsError()
                         : "owner closed the connection before its HTTP/2 preface");
        return;
      }
      // Every stream still open hears it now (only this connection's streams).
      if (codec_ != nullptr) codec_->onConnectionClosed();
      pool_.onClientClosed(*this);
      return;
    }
  }
}

void Http2Client::onAboveWriteBufferHighWatermark() {
  // May come from inside the codec's own writes: only flags are set here. New streams go
  // elsewhere from now on (hasCapacity).
  if (!write_blocked_) pool_.stats_.owner_h2_write_blocked.inc();
  write_blocked_ = true;
  if (codec_ != nullptr) codec_->onAboveWriteBufferHighWatermark();
}

void Http2Client::onBelowWriteBufferLowWatermark() {
  write_blocked_ = false;
  if (codec_ != nullptr) codec_->onBelowWriteBufferLowWatermark();
  // Room again: waiters may have it (on the next loop turn, outside these writes).
  scheduleCheck();
}

void Http2Client::onGoAway(int32_t, uint32_t) {
  pool_.stats_.owner_h2_goaways_received.inc();
  if (state_ == State::Ready) state_ = State::Draining;
  idle_timer_->disable();
  pool_.onClientGoAway(*this);
  scheduleCheck();
}

void Http2Client::onRemoteSettings() {
  if (state_ == State::Connecting) {
    connect_timer_->disable();
    state_ = State::Ready;
  }
  scheduleCheck();
}

void Http2Client::onPingAck() { ping_timeout_timer_->disable(); }

void Http2Client::onPingTimer() {
  if (state_ == State::Closed || codec_ == nullptr) return;
  const auto interval = pool_.settings_.h2_ping_interval;
  const auto quiet =
      std::chrono::duration_cast<event::Millis>(std::chrono::steady_clock::now() - last_read_);
  if (quiet < interval) {
    ping_timer_->enable(interval - quiet);
    return;
  }
  codec_->sendPing();
  if (!ping_timeout_timer_->enabled()) ping_timeout_timer_->enable(pool_.settings_.h2_ping_timeout);
  ping_timer_->enable(interval);
}

}  // namespace ferry::upstream
