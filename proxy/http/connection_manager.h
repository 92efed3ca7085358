#pragma once
// One downstream HTTP connection: owns the socket (net::Connection), the server codec and the
// streams in flight (ActiveStream, any number). It feeds bytes to the codec, creates a stream
// per request, answers malformed input with 4xx and closes, and enforces the connection's
// timeouts (request head, keep-alive idle) and drain. A cut response resets its own stream
// (the codec decides what that means: HTTP/1.1 closes the connection). HTTP/1.1 carries one
// stream at a time; pipelined requests wait in the input buffer until the previous response
// is complete, and until the client has read enough of the answers (write buffer below its
// low watermark).
//
// Owned by its worker (server::Worker, the ConnectionManagerOwner); deletes itself only
// through the owner's onConnectionClosed(), which defers the deletion.

#include <memory>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/http/active_stream.h"
#include "proxy/http/codec.h"
#include "proxy/http/connection_share.h"
#include "proxy/http/http2/codec_factory.h"
#include "proxy/net/connection.h"
#include "proxy/stats/proxy_stats.h"

namespace ferry::http {

struct ConnectionManagerConfig {
  StreamConfig stream;
  // HTTP/2 (h2 by ALPN, h2c by the preface); off: every connection speaks HTTP/1.1.
  bool http2_enabled = true;
  http2::Http2Settings http2;
  uint32_t max_request_header_bytes = 60 * 1024;
  uint32_t max_request_headers = 100;
  // Requests of one connection in flight at once; more wait (connection_share.h).
  uint32_t max_active_requests_per_connection = 100;
  uint32_t high_watermark = 1024 * 1024;
  event::Millis request_head_timeout{10'000};
  event::Millis keepalive_idle_timeout{60'000};
};

class ConnectionManager;

// Implemented by the worker that owns connection managers.
class ConnectionManagerOwner {
 public:
  virtual ~ConnectionManagerOwner() = default;
  // The connection is closed; the owner deletes `manager` (deferred).
  virtual void onConnectionClosed(ConnectionManager& manager) = 0;
};

class ConnectionManager : public net::ConnectionCallbacks,
                          public ServerConnectionCallbacks,
                          public StreamOwner,
                          public event::DeferredDeletable {
 public:
  // `worker`: the context of the worker that accepted the connection (its dispatcher; handed to
  // each stream); owned by the worker, outlives the connection manager.
  ConnectionManager(ConnectionManagerOwner& owner, net::ConnectionPtr connection,
                    event::WorkerContext& worker, const ConnectionManagerConfig& config,
                    stats::ProxyStats& stats);
  ~ConnectionManager() override;

  // Drain: close now when idle, else after the response in flight, whose head (when not yet
  // written) says `Connection: close`.
  void drain();
  // The drain's deadline: a live feed ends with a complete response (its last chunk, or a 503
  // for a long-poll still waiting; ActiveStream::endLiveFeed), then the connection closes once
  // it is flushed; anything else still open is closed now. Says what happened to its streams.
  struct DrainEnd {
    int live_feeds_ended = 0;
    int long_polls_answered = 0;
    int streams_cut = 0;
  };
  DrainEnd endDrain();
  bool idle() const { return streams_.empty(); }

  // net::ConnectionCallbacks
  void onData(Buffer& input) override;
  void onEvent(net::ConnectionEvent event) override;
  void onAboveWriteBufferHighWatermark() override;
  void onBelowWriteBufferLowWatermark() override;
  // ServerConnectionCallbacks
  RequestDecoder& onNewRequest(ResponseEncoder& encoder) override;
  void readDisableConnection(bool disable) override;
  void onStreamRefused(const CodecError& error) override;
  // StreamOwner
  void onStreamComplete(ActiveStream& stream, bool cut) override;
  std::string_view downstreamPeerIdentity() const override {
    return connection_->tlsPeerIdentity();
  }
  std::string_view downstreamAddress() override;
  bool downstreamTls() const override { return connection_->tls(); }
  bool tryStartStream(ActiveStream& stream) override;

 private:
  void dispatchInput();
  // Creates the codec once the first bytes (or TLS's ALPN) tell the protocol; false while
  // they do not yet (a prefix of the HTTP/2 preface).
  bool createCodec();
  // Drain on HTTP/2: the final GOAWAY goes out a little after the first (RFC 9113 §6.8: a
  // client's streams already on the wire are still taken).
  void onDrainGoAway();
  void onKeepAliveIdle();
  void onCodecError();
  void writeErrorAndClose(int status, std::string_view code, std::string_view message);
  // A request refused before a stream existed (codec error, 408): counted in
  // ferry_requests_completed_total and the duration histogram, and logged.
  void recordRefusal(int status, std::string_view detail);
  void armTimers();
  void onRequestHeadTimeout();
  // Decodes the next pipelined request unless the client's write buffer is over its high
  // watermark; then waits for onBelowWriteBufferLowWatermark().
  void resumeNextRequest();
  void close(net::CloseMode mode);
  // close(FlushWrite) once the codec wrote what it queued: an HTTP/2 codec writes its frames
  // (the final GOAWAY) only when dispatch() returns, so a stream that ends inside dispatch (a
  // client's RST_STREAM) leaves the close to dispatchInput.
  void closeAfterCodecWrites();

  ConnectionManagerOwner& owner_;
  net::ConnectionPtr connection_;
  event::WorkerContext& worker_;
  event::Dispatcher& dispatcher_;  // worker_'s
  const ConnectionManagerConfig& config_;
  stats::ProxyStats& stats_;
  std::unique_ptr<ServerCodec> codec_;  // null until the first bytes chose it
  // Open streams, in no order (HTTP/1.1: at most one). A vector keeps its capacity, so a
  // keep-alive connection allocates nothing per request for it.
  std::vector<std::unique_ptr<ActiveStream>> streams_;
  // HTTP/2 only (an HTTP/1.1 connection runs one request at a time): its fair share.
  std::unique_ptr<ConnectionShare> share_;
  event::TimerPtr idle_timer_;
  event::TimerPtr head_timer_;
  event::TimerPtr resume_timer_;  // next pipelined request, after the callbacks unwind
  event::TimerPtr goaway_timer_;  // HTTP/2 drain: the final GOAWAY
  bool draining_ = false;
  bool closed_ = false;
  bool read_paused_ = false;
  bool dispatching_ = false;           // inside codec_->dispatch()
  bool close_after_dispatch_ = false;  // closeAfterCodecWrites() was called meanwhile
  // No request has started on this connection yet: the request-head timer runs from accept.
  bool first_request_ = true;
  // A response completed over the write high watermark: the next request waits for the drain.
  bool next_request_held_ = false;
  std::string peer_address_;  // downstreamAddress(), looked up once
  bool peer_address_known_ = false;
  // When the request now being read started (the access log's start of a refused request).
  std::chrono::system_clock::time_point head_started_ = std::chrono::system_clock::now();
};

}  // namespace ferry::http
