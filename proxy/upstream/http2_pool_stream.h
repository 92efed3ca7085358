#pragma once
// One stream of the HTTP/2 pool: the request encoder and the per-stream control the pool hands
// its user, around the codec's ClientStream on whichever connection carries it. It turns the
// codec's resets into the pool interface's failures (docs/forwarding.md, Failures):
// - refused before processing (REFUSED_STREAM, §8.7; above a GOAWAY's last-stream-id, §6.8;
//   or its HEADERS never left): `request_bytes_sent` false, whatever was written, since the
//   owner processed nothing; the user answers with the local 409.
//   Sent again once, inside the pool, on another connection: a stream the GOAWAY left out or
//   whose HEADERS never left (a draining or restarting owner, a connection lost before it got
//   to the stream). Not after REFUSED_STREAM: that owner is at its stream limit right now, and
//   the client, told by the 409, retries with its own back-off instead of ferry adding load.
// - reset or lost after its HEADERS left and before the response head: `request_bytes_sent`
//   true (the user answers 503 forward_failed);
// - after the head: the user cuts the client's response.
// While the pool hands it to its HTTP/1.1 pool (the owner picked http/1.1 by ALPN while it
// waited), it forwards everything to and from the HTTP/1.1 stream (delegate_).
// Owned by its Http2ConnPool; deleted (deferred) once the user let go or it failed.

#include <cstdint>
#include <string>

#include "proxy/buffer/buffer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/http/http2/client_stream.h"
#include "proxy/upstream/conn_pool.h"
#include "proxy/upstream/pool_stream_base.h"

namespace ferry::upstream {

class Http2ConnPool;
class Http2Client;

class Http2PoolStream : public PoolStreamBase,
                        public UpstreamStream,
                        public http::RequestEncoder,
                        public http::ClientStreamCallbacks,
                        public UpstreamStreamCallbacks {
 public:
  Http2PoolStream(Http2ConnPool& pool, http::ResponseDecoder& decoder,
                  UpstreamStreamCallbacks& callbacks, const RequestSource& source)
      : PoolStreamBase(decoder, callbacks, source), pool_(pool) {}

  // From the pool: a connection has room for this stream / none could be had / the waiting
  // stream goes to `http1` (the owner speaks HTTP/1.1).
  void onConnectionReady(Http2Client& client);
  void onConnectFailed(UpstreamFailure failure);
  void handOver(ConnectionPool& http1);

  // UpstreamStream (from the user)
  void readDisable(bool disable) override;
  void resetStream() override;
  uint64_t requestBytesSent() const override;
  // http::RequestEncoder (from the user; to the codec's stream)
  void encodeHeaders(const http::RequestHeaders& headers, bool end_stream) override;
  void encodeData(Buffer& data, bool end_stream) override;
  // http::ResponseDecoder: PoolStreamBase (from the codec; to the user)
  // http::ClientStreamCallbacks (from the codec)
  void onStreamReset(http::ClientResetReason reason, uint32_t h2_error) override;
  void onRequestSent() override;
  // (also UpstreamStreamCallbacks' pair, from the HTTP/1.1 stream it was handed to: the same
  // two names at every layer, one override for both)
  void onAboveWriteBufferHighWatermark() override { aboveWriteWatermark(); }
  void onBelowWriteBufferLowWatermark() override { belowWriteWatermark(); }
  // UpstreamStreamCallbacks (from the HTTP/1.1 stream it was handed to; to the user)
  void onPoolReady(http::RequestEncoder& encoder, UpstreamStream& stream) override;
  void onPoolFailure(const UpstreamFailure& failure) override;
  void onStreamReset(const UpstreamFailure& failure) override;

 private:
  friend class Http2ConnPool;
  // Lets go of the codec's stream and the connection's room.
  void releaseConnection();
  // Sends the head and the body kept for the retry on the retry's connection.
  void resend();
  // True when the request may go again (the whole body encoded so far is kept).
  bool prepareRetry();
  void removeFromPool() override;

  Http2ConnPool& pool_;

  Http2Client* client_ = nullptr;            // the connection carrying it; null while waiting
  http::http2::ClientStream* h2_ = nullptr;  // its stream there
  UpstreamStream* delegate_ = nullptr;       // handed to the HTTP/1.1 pool: its stream
  http::RequestEncoder* delegate_encoder_ = nullptr;  // set when a retry was handed over
  bool handed_over_ = false;
};

}  // namespace ferry::upstream
