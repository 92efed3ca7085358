#pragma once
// One HTTP/1.1 connection to an upstream target, owned by its Http1ConnPool. It is either
// connecting, idle in the pool, or carrying exactly one request for a user (the pool's
// Http1PoolStream), which receives the response through the ResponseDecoder it passed to
// startRequest() and connection trouble through ClientUser.

#include <memory>

#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/http/filter.h"
#include "proxy/net/connection.h"

namespace ferry::upstream {

class Http1ConnPool;

// Implemented by whoever carries a request on the client (Http1PoolStream).
class ClientUser {
 public:
  virtual ~ClientUser() = default;
  // The connection closed or failed before the response completed. `kind`:
  // - Reset: closed or cut short; `request_bytes_sent` says whether any byte of this request
  //   was written to the socket buffer;
  // - ProtocolError: the response was malformed;
  // - TlsHandshakeFailed: the upstream refused the handshake after this client counted it
  //   complete (TLS 1.3: a client certificate checked after the client's Finished), so it
  //   processed nothing, whatever was written; `request_bytes_sent` is false.
  // `detail` adds to the failure message (e.g. OpenSSL's reason); may be empty.
  virtual void onClientReset(http::UpstreamFailure::Kind kind, bool request_bytes_sent,
                             const std::string& detail) = 0;
  // Backpressure on the upstream's write side (request body).
  virtual void onClientAboveWriteWatermark() = 0;
  virtual void onClientBelowWriteWatermark() = 0;
};

class UpstreamClient : public net::ConnectionCallbacks, public event::DeferredDeletable {
 public:
  UpstreamClient(Http1ConnPool& pool, net::ConnectionPtr connection, size_t high_watermark);
  ~UpstreamClient() override;

  // Starts a request on this (idle, connected) client.
  http::RequestEncoder& startRequest(http::ResponseDecoder& decoder, ClientUser& user);
  // The user is done: the response completed (or the user gave up). Returns the client to
  // the pool when it can carry another request, closes it otherwise.
  void release(bool request_complete);
  // Stops / resumes reading the response (client-side backpressure).
  void readDisable(bool disable) { connection_->readDisable(disable); }
  bool reused() const { return requests_ > 1; }
  uint64_t requestBytesSent() const { return codec_->requestBytesEncoded(); }
  net::Connection& connection() { return *connection_; }

  // net::ConnectionCallbacks
  void onData(Buffer& input) override;
  void onEvent(net::ConnectionEvent event) override;
  void onAboveWriteHighWatermark() override;
  void onBelowWriteLowWatermark() override;

 private:
  friend class Http1ConnPool;
  // A malformed response: one series per reason in ferry_upstream_protocol_errors_total.
  void countProtocolError(http::CodecErrorKind kind);
  Http1ConnPool& pool_;
  net::ConnectionPtr connection_;
  std::unique_ptr<http::ClientCodec> codec_;
  ClientUser* user_ = nullptr;
  event::TimerPtr timer_;  // connect timeout while connecting, idle timeout while idle
  event::TimerPtr release_timer_;
  uint64_t requests_ = 0;
  bool connected_ = false;
  bool closed_ = false;
};

}  // namespace ferry::upstream
