#pragma once
// One HTTP/1.1 connection to an upstream target, owned by its Http1ConnPool: the socket, the
// client codec on it (http1/client_codec.h) and its timers; the HTTP/1.1 twin of Http2Client.
// It is either connecting, idle in the pool, or carrying exactly one stream for a user (the
// pool's Http1PoolStream), which receives the response through the ResponseDecoder and the
// stream's other events (the connection's write watermarks, the request's end, a response
// lost with the connection) through the http::ClientStreamCallbacks it passed to
// startStream(), as an HTTP/2 stream does.

#include <memory>

#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/http/http1/client_codec.h"
#include "proxy/net/connection.h"
#include "proxy/upstream/upstream_target.h"

namespace ferry::upstream {

class Http1ConnPool;

class Http1Client : public net::ConnectionCallbacks,
                    public event::DeferredDeletable,
                    private event::Flushable {
 public:
  Http1Client(Http1ConnPool& pool, net::ConnectionPtr connection, size_t high_watermark);
  ~Http1Client() override;

  // Starts a stream on this (idle, connected) client. A response lost with the connection
  // reaches `callbacks` as onStreamReset: ProtocolError (malformed), ConnectionLost (closed
  // or cut short; tlsRefused() tells a handshake the upstream refused late).
  http::RequestEncoder& startStream(http::ResponseDecoder& decoder,
                                    http::ClientStreamCallbacks& callbacks);
  // The user is done: the response completed (or the user gave up). Returns the client to
  // the pool when it can carry another request, closes it otherwise.
  void release(bool request_complete);
  // Stops / resumes reading the response (client-side backpressure).
  void readDisable(bool disable) { connection_->readDisable(disable); }
  bool reused() const { return requests_ > 1; }
  uint64_t requestBytesSent() const { return codec_->requestBytesEncoded(); }
  // The upstream refused the TLS handshake after this client counted it complete (TLS 1.3:
  // a client certificate checked after the client's Finished): it processed nothing,
  // whatever was written.
  bool tlsRefused() const { return tls_refused_; }
  net::Connection& connection() { return *connection_; }

  // net::ConnectionCallbacks
  void onData(Buffer& input) override;
  void onEvent(net::ConnectionEvent event) override;
  void onAboveWriteBufferHighWatermark() override;
  void onBelowWriteBufferLowWatermark() override;

 private:
  friend class Http1ConnPool;
  // A malformed response: one series per reason in ferry_upstream_protocol_errors_total.
  void countProtocolError(http::CodecErrorKind kind);
  Http1ConnPool& pool_;
  net::ConnectionPtr connection_;
  std::unique_ptr<http::http1::Http1ClientCodec> codec_;
  event::TimerPtr timer_;  // connect timeout while connecting, idle timeout while idle
  // Back to the pool once the callbacks under release() unwind: at the end of the read
  // callback (the dispatcher's queue: no event per request), else on the next loop turn.
  void flushNow() override;
  // The deferred release's end (either way): idle in the pool unless closed or carrying again.
  void returnToPool();
  event::TimerPtr release_timer_;  // release() outside a read callback
  bool release_queued_ = false;    // with the dispatcher (flushNow)
  uint64_t requests_ = 0;
  bool carrying_ = false;  // a stream's user holds it (between startStream and release)
  bool connected_ = false;
  bool closed_ = false;
  bool tls_refused_ = false;
};

}  // namespace ferry::upstream
