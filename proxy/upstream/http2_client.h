#pragma once
// One multiplexed HTTP/2 connection to an owner, owned by its Http2ConnPool: the socket, the
// client codec on it (http2/client_codec.h), and the timers that keep it honest. It is
// connecting (TCP, TLS, then until the owner's SETTINGS arrive: connect_timeout covers it all;
// a close or a broken preface meanwhile is a failed connect), ready (taking streams up to its
// capacity), draining (the owner's GOAWAY came, or ferry is closing it: its streams finish, no
// new one starts), or closed. A closed connection lives on, unlinked from the pool, until
// every pool stream let go of its codec's streams (Http2ConnPool::reap).
//
// Keepalive: when nothing was read for `ping_interval`, a PING goes out; no ack within
// `ping_timeout` closes the connection (ferry_owner_h2_ping_timeouts_total), which fails only
// the streams it carries. This finds a dead owner behind a quiet live feed, where no request
// is waiting for an answer to notice. With no stream for `idle_timeout`, the connection is
// closed (GOAWAY first).
//
// Write backpressure: while the socket's output is above its high watermark (the owner does
// not read, or reads slower than ferry writes) the connection takes no new stream; the pool
// opens another connection for them (a new connect to a stuck owner then fails or times out,
// and the waiters get the pool's connect failure, the local 409), instead of queuing them
// behind the stuck bytes until the PING timeout (ferry_owner_h2_write_blocked_total counts
// each rise). Below the low watermark it takes streams again.

#include <chrono>
#include <cstdint>
#include <memory>

#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/http/http2/client_codec.h"
#include "proxy/net/connection.h"
#include "proxy/upstream/conn_pool.h"
#include "proxy/upstream/upstream_target.h"

namespace ferry::upstream {

class Http2ConnPool;

class Http2Client : public net::ConnectionCallbacks,
                    public http::http2::ClientConnectionCallbacks,
                    public event::DeferredDeletable {
 public:
  enum class State { Connecting, Ready, Draining, Closed };

  Http2Client(Http2ConnPool& pool, net::ConnectionPtr connection);
  ~Http2Client() override;

  // Connected, and the pool chose HTTP/2 for it (ALPN h2, or h2c): the codec starts and
  // writes the connection preface. The connection is Ready when the owner's SETTINGS come.
  void start();
  // Opens a stream on this Ready connection for a pool stream. The pool counts it in
  // activeStreams() until the pool stream calls onStreamDone().
  http::http2::ClientStream& startStream(http::ResponseDecoder& decoder,
                                         http::ClientStreamCallbacks& callbacks);
  void onStreamDone();
  // Takes no new stream from now on; closes once its streams are done.
  void drain();
  // Closes now; every stream it carries hears onStreamReset.
  void close();

  State state() const { return state_; }
  // min(the owner's SETTINGS_MAX_CONCURRENT_STREAMS, the configured cap).
  uint32_t capacity() const;
  bool hasCapacity() const {
    return state_ == State::Ready && !write_blocked_ && active_ < capacity();
  }
  // Above the write high watermark (and not yet back below the low one).
  bool writeBlocked() const { return write_blocked_; }
  uint32_t activeStreams() const { return active_; }
  uint64_t streamsCarried() const { return carried_; }
  bool tlsRefused() const { return tls_refused_; }
  net::Connection& connection() { return *connection_; }
  // Gives up the (connected, codec-less) connection to another pool; this client is then
  // only destroyed.
  net::ConnectionPtr takeConnection();

  // net::ConnectionCallbacks
  void onData(Buffer& input) override;
  void onEvent(net::ConnectionEvent event) override;
  void onAboveWriteBufferHighWatermark() override;
  void onBelowWriteBufferLowWatermark() override;
  // http2::ClientConnectionCallbacks
  void onGoAway(int32_t last_stream_id, uint32_t error_code) override;
  void onRemoteSettings() override;
  void onPingAck() override;

 private:
  friend class Http2ConnPool;
  // After a stream ended or the owner's SETTINGS came: on the next loop turn (never inside the
  // codec's own callbacks) the pool gives waiters this connection's room, and an idle or
  // drained connection is timed out or closed.
  void scheduleCheck();
  void check();
  void onPingTimer();

  Http2ConnPool& pool_;
  net::ConnectionPtr connection_;
  std::unique_ptr<http::http2::Http2ClientCodec> codec_;
  State state_ = State::Connecting;
  uint32_t active_ = 0;
  uint64_t carried_ = 0;
  std::chrono::steady_clock::time_point last_read_;
  event::TimerPtr connect_timer_;
  event::TimerPtr idle_timer_;
  event::TimerPtr ping_timer_;
  event::TimerPtr ping_timeout_timer_;
  event::TimerPtr check_timer_;
  bool counted_ = false;  // in ferry_owner_connections_active{protocol="h2"}
  bool write_blocked_ =
      false;  // onAboveWriteBufferHighWatermark, until onBelowWriteBufferLowWatermark
  // The owner refused the TLS handshake after ferry counted it complete (TLS 1.3: a client
  // certificate it does not accept, checked after the client's Finished): it processed
  // nothing, whatever was written.
  bool tls_refused_ = false;
};

}  // namespace ferry::upstream
