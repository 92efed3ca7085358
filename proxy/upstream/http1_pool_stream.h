#pragma once
// One stream of the HTTP/1.1 pool: the request encoder and the per-stream control the pool
// hands its user, wrapped around whichever connection (Http1Client) carries it. Between the
// user and the connection it watches what passes (the request's end, the response's start and
// end), which is what the pool needs to decide, when the connection fails, whether to send the
// request again on a fresh connection without the user noticing (RFC 9112 §9.3.1):
// - only when the connection was reused (a fresh one that fails is the upstream's answer),
//   only once, and only before any response byte came;
// - when no request byte left, always; otherwise only an idempotent request (RFC 9110
//   §9.2.2) whose body was wholly encoded and is wholly kept by the user (RequestSource).
// Owned by its Http1ConnPool; deleted (deferred) once the user let go or it failed.

#include <cstdint>
#include <list>
#include <memory>
#include <string>

#include "proxy/buffer/buffer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/upstream/conn_pool.h"
#include "proxy/upstream/http1_client.h"
#include "proxy/upstream/pool_stream_base.h"

namespace ferry::upstream {

class Http1ConnPool;

class Http1PoolStream : public PoolStreamBase,
                        public UpstreamStream,
                        public http::RequestEncoder,
                        public http::ClientStreamCallbacks {
 public:
  Http1PoolStream(Http1ConnPool& pool, http::ResponseDecoder& decoder,
                  UpstreamStreamCallbacks& callbacks, const RequestSource& source)
      : PoolStreamBase(decoder, callbacks, source), pool_(pool) {}

  // From the pool: a connection is ready for this stream / none could be had.
  void onConnectionReady(Http1Client& client);
  void onConnectFailed(UpstreamFailure failure);

  // UpstreamStream (from the user)
  void readDisable(bool disable) override;
  void resetStream() override;
  uint64_t requestBytesSent() const override {
    return client_ != nullptr ? client_->requestBytesSent() : 0;
  }
  // http::RequestEncoder (from the user; to the connection's codec)
  void encodeHeaders(const http::RequestHeaders& headers, bool end_stream) override;
  void encodeData(Buffer& data, bool end_stream) override;
  // http::ResponseDecoder: PoolStreamBase (from the connection's codec; to the user)
  // http::ClientStreamCallbacks (from the connection's codec)
  void onStreamReset(http::ClientResetReason reason, uint32_t code) override;
  void onRequestSent() override;
  void onAboveWriteBufferHighWatermark() override { aboveWriteWatermark(); }
  void onBelowWriteBufferLowWatermark() override { belowWriteWatermark(); }

 private:
  friend class Http1ConnPool;
  // True when the request may go again on a fresh connection; then retry_body_ holds the body.
  bool prepareRetry(bool request_bytes_sent);
  // Sends the head and the body kept for the retry on the retry's connection.
  void resend();
  void removeFromPool() override;

  Http1ConnPool& pool_;
  Http1Client* client_ = nullptr;            // the connection carrying it; null while waiting
  http::RequestEncoder* encoder_ = nullptr;  // that connection's codec
  uint32_t attempt_ = 0;                     // connections it was given so far
  bool reused_ = false;                      // the current connection carried a request before
};

}  // namespace ferry::upstream
