#pragma once
// The connection pool interface: how the router's upstream request gets a stream to an
// upstream target. The unit is the stream (one request/response exchange), not the connection:
// the user encodes a request and decodes a response, and never learns which connection carried
// it, whether it was reused, or whether the pool sent it twice. This is Envoy's
// ConnectionPool::Instance handing out an Http::RequestEncoder for a ResponseDecoder.
// HTTP/1.1 (http1_conn_pool.h) keeps keep-alive reuse and the stale-connection retry inside the
// pool; HTTP/2 (multiplexed streams on one connection) implements the same interface.
//
// Where it sits: filters/router/upstream_request.cc is the user. A stream's life:
//   pool.newStream(decoder, callbacks, source)
//     -> callbacks.onPoolReady(encoder, stream)   the user encodes head and body with `encoder`
//        callbacks.onRequestSent()                the whole request is with the upstream
//        decoder.onResponseHeaders / Data         the answer
//        stream.resetStream()                     the user lets go (exactly once)
//     or callbacks.onPoolFailure(failure)         no stream could be had; nothing was sent
//     or callbacks.onStreamReset(failure)         after ready: it failed before its response ended
// Every call is made on the worker's thread, possibly before newStream() returns.

#include <cstdint>
#include <memory>

#include "proxy/buffer/buffer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/tls/client_context.h"
#include "proxy/upstream/upstream_target.h"

namespace ferry::upstream {

// How a worker speaks to owners (forwarding.owner_protocol; worker_upstreams.h chooses).
enum class OwnerProtocol {
  Auto,   // https: ALPN [h2, http/1.1], the owner picks; http: HTTP/1.1
  H2,     // https: ALPN [h2]; http: h2c with prior knowledge (RFC 9113 §3.3)
  Http1,  // HTTP/1.1 (https: ALPN [http/1.1])
};

struct PoolSettings {
  uint32_t max_connections = 256;
  uint32_t max_pending = 1024;
  event::Millis connect_timeout{2000};
  event::Millis idle_timeout{4000};
  size_t high_watermark = 1024 * 1024;
  // Client TLS for https targets (shared by every worker, swapped on SIGHUP); null: https
  // targets are Unsupported.
  std::shared_ptr<tls::ClientContextSlot> tls;
  // Owners (forwarding.owner_protocol, forwarding.owner_http2). The local instance is
  // `local` (always HTTP/1.1, its connections not counted as owner connections).
  OwnerProtocol owner_protocol = OwnerProtocol::Auto;
  uint32_t h2_max_streams_per_connection = 1000;
  event::Millis h2_ping_interval{10'000};
  event::Millis h2_ping_timeout{5'000};
  UpstreamTarget local;
};

// The request as the user sent it, for a pool that must send it again on its own (HTTP/1.1: a
// reused keep-alive connection turned out closed, RFC 9112 §9.3.1). Implemented by the user;
// valid for the stream's life.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // The head exactly as the user encoded it.
  virtual const http::RequestHeaders& requestHead() const = 0;
  // Appends a copy of every body byte the user encoded so far to `out`; false when they were
  // not all kept (then the request cannot be sent again once a byte of it left).
  virtual bool copyRequestBody(Buffer& out) const = 0;
};

// One stream from a pool, given to the user in onPoolReady (and, while it waits for a
// connection, returned by newStream() as the handle to cancel it).
class UpstreamStream {
 public:
  virtual ~UpstreamStream() = default;
  // Stops / resumes reading the response (the client reads slowly): backpressure per stream.
  virtual void readDisable(bool disable) = 0;
  // Bytes of the request written to the connection now carrying the stream; 0 while it waits
  // for one (also during a pool-internal retry: the request is not with any upstream then).
  virtual uint64_t requestBytesSent() const = 0;
  // The user is done: no call reaches it afterwards. A waiting stream is cancelled. A stream
  // whose request and response both ended is not reset (HTTP/1.1: its connection goes back to
  // the pool); any other is (HTTP/1.1: its connection closes). Call it exactly once, unless
  // onPoolFailure or onStreamReset came first (the stream is gone then).
  virtual void resetStream() = 0;
};

// Implemented by the user of a stream (the router's upstream request).
class UpstreamStreamCallbacks {
 public:
  virtual ~UpstreamStreamCallbacks() = default;
  // A connection carries the stream now: encode the request with `encoder`. Called once.
  virtual void onPoolReady(http::RequestEncoder& encoder, UpstreamStream& stream) = 0;
  // No stream could be had (refused, timed out, overflow, unsupported); nothing was sent.
  virtual void onPoolFailure(const UpstreamFailure& failure) = 0;
  // After onPoolReady: the stream failed before its response ended (the connection closed or
  // was cut, the response was malformed, a pool-internal retry could not connect).
  // `failure.request_bytes_sent` says whether the upstream may have seen the request.
  virtual void onStreamReset(const UpstreamFailure& failure) = 0;
  // The request's last byte was written to the upstream's connection (again after a
  // pool-internal retry sent the request anew): the response-head clock may start.
  virtual void onRequestSent() = 0;
  // Backpressure on the request body: the connection's write buffer is above its high
  // watermark / back below its low one.
  virtual void onAboveWriteBufferHighWatermark() = 0;
  virtual void onBelowWriteBufferLowWatermark() = 0;
};

// A worker's pool to one upstream target. Owned by the worker's WorkerUpstreams.
class ConnectionPool {
 public:
  virtual ~ConnectionPool() = default;
  // Asks for a stream. `decoder` gets the response, `callbacks` the stream's life, `source`
  // the request again should the pool need it; all three outlive the stream. Returns the
  // waiting stream (cancel with resetStream()), or null when a callback already came
  // (onPoolReady or onPoolFailure) before returning.
  virtual UpstreamStream* newStream(http::ResponseDecoder& decoder,
                                    UpstreamStreamCallbacks& callbacks,
                                    const RequestSource& source) = 0;
  virtual const UpstreamTarget& target() const = 0;
};

}  // namespace ferry::upstream
