#pragma once
// Internal requests (Envoy's AsyncClient): a filter issues a request of its own, which runs
// through the listener's whole normal path as a client's request does: request identity, the
// filter chain (owner forwarding with owner routing, the local 409 and the forward), the router
// and its pools, the stream's timeouts, the counters and the access log record. The filter reads
// the answer as a response head, body bytes and an end, or a failure. The machinery is
// internal_stream.h (an ActiveStream whose client is the filter).
//
// Who calls what, and who owns what:
// - A filter calls StreamFilterCallbacks::startInternalRequest() and owns the InternalRequest
//   it returns. Destroying it cancels: the internal stream is reset (its upstream attempt is
//   released; the access log says `client_left`) and no callback is made after. Destroying it
//   inside a callback is allowed.
// - The request starts on the next turn of the worker's loop, never inside
//   startInternalRequest(): no callback comes before the filter holds the handle.
// - The callbacks run on the issuing stream's worker, in this order: onInternalResponseHeaders
//   once, then onInternalResponseData any number of times; the response ends with an
//   `end_stream` on one of them or with onInternalResponseTrailers. Instead, at any point:
//   onInternalRequestFailed (no response head came: the upstream failed and no filter of the
//   internal request answered it) or onInternalResponseReset (after the head: the response
//   was cut). After an end, a failure or a reset nothing more is called.
// - 1xx heads are not passed on.
// - The issuing stream keeps its internal requests: when it ends (complete, cut, its client
//   left, a drain), those still open end with it, as if cancelled (no callback).
// - Except those started through an InternalRequestIssuer (below), which a filter takes from a
//   stream for requests that must outlive it (one upstream feed shared by several clients):
//   they end when the issuer is destroyed, not with the stream.
//
// Identity (the rule): the head's x-request-id is `<issuing request id>-r<n>`, n counting the
// issuing stream's internal requests from 1 (the issuing id is shortened from its end when the
// whole would be longer than kMaxRequestIdBytes); with `x_forwarded`, X-Forwarded-For and
// -Proto are the issuing request's as its own upstream saw them (no socket is involved: the
// internal request comes from the same client through the same hops). The access log record's
// `client` and `peer` are the issuing client's.
//
// The filter that issued it runs in the internal request's chain too (every request gets the
// same filters): StreamFilterCallbacks::internalRequest() tells it it is in one, so that it
// lets its own request pass.

#include <memory>

#include "proxy/buffer/buffer.h"
#include "proxy/http/header_map.h"
#include "proxy/upstream/upstream_target.h"

namespace ferry::http {

// Implemented by the filter that issued the request; must outlive its InternalRequest.
class InternalResponseCallbacks {
 public:
  virtual ~InternalResponseCallbacks() = default;
  // The response head (after the internal request's filters ran). `end_stream`: no body.
  virtual void onInternalResponseHeaders(ResponseHeadersPtr headers, bool end_stream) = 0;
  // Body bytes, in order; the callee may move them out of `data`. `end_stream`: the last.
  virtual void onInternalResponseData(Buffer& data, bool end_stream) = 0;
  // The response ends with a trailer section (an HTTP/2 upstream's). The default drops the
  // fields and ends the body.
  virtual void onInternalResponseTrailers(HeaderMap trailers) {
    Buffer none;
    onInternalResponseData(none, true);
  }
  // No response head came: the upstream attempt failed and no filter in the internal request's
  // chain answered it (for a client, the router would have answered 502, 503 or 504; the
  // access log records that answer). `failure` says how.
  virtual void onInternalRequestFailed(const upstream::UpstreamFailure& failure) = 0;
  // The response was cut after its head: `failure` is the upstream's failure that cut it;
  // null when ferry cut it itself (a timeout, a filter's reply once the response had started).
  virtual void onInternalResponseReset(const upstream::UpstreamFailure* failure) = 0;
};

// The filter's handle on one internal request. Destroying it cancels the request.
class InternalRequest {
 public:
  virtual ~InternalRequest() = default;
  // Request body bytes, after a head started with `end_stream` false; the last call has
  // `end_stream`. Nothing is done once the request has ended.
  virtual void sendData(Buffer& data, bool end_stream) = 0;
  // Backpressure from the filter: true stops reading the response from the upstream, false
  // resumes it, exactly as a client's write buffer above its high / below its low watermark
  // does (ActiveStream's onAboveWriteBufferHighWatermark / onBelowWriteBufferLowWatermark).
  // Repeating the current state does nothing.
  virtual void pause(bool paused) = 0;
};
using InternalRequestPtr = std::unique_ptr<InternalRequest>;

// Starts internal requests that do not end with the stream the issuer was taken from
// (StreamFilterCallbacks::newInternalRequestIssuer): they run on the same listener and worker
// with that stream's identity (x-request-id `<its id>-r<n>`, n counting this issuer's requests;
// its X-Forwarded-* and client address), and the callbacks are as above. Destroying the issuer
// cancels every request it started that is still open (no callback after). Owned by the
// filter, or by what it hands the issuer to on the same worker (a per-worker value,
// event/worker_context.h); it must not outlive that worker's context.
class InternalRequestIssuer {
 public:
  virtual ~InternalRequestIssuer() = default;
  // As StreamFilterCallbacks::startInternalRequest; never null.
  virtual InternalRequestPtr start(RequestHeadersPtr head, bool end_stream,
                                   InternalResponseCallbacks& callbacks) = 0;
};
using InternalRequestIssuerPtr = std::unique_ptr<InternalRequestIssuer>;

}  // namespace ferry::http
