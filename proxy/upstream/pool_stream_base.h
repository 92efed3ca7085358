#pragma once
// What the HTTP/1.1 and HTTP/2 pool streams (http1_pool_stream.h, http2_pool_stream.h) do the
// same way, whichever connection carries them: who they answer to (the user's decoder and
// callbacks, the request as kept by the user), the state both watch between the user and the
// connection, passing the response on until the user let go, and ending once with a failure.
// What differs (the connection, the retry rule, how a reset is read) stays in each stream.

#include <memory>

#include "proxy/buffer/buffer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/upstream/conn_pool.h"

namespace ferry::upstream {

class ConnPoolBase;

class PoolStreamBase : public http::ResponseDecoder, public event::DeferredDeletable {
 public:
  // http::ResponseDecoder (from the connection; to the user, unless it let go or it failed)
  void onInformational(http::ResponseHeadersPtr headers) override;
  void onResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) override;
  void onResponseData(Buffer& data, bool end_stream) override;
  void onResponseTrailers(http::HeaderMap trailers) override;

 protected:
  PoolStreamBase(http::ResponseDecoder& decoder, UpstreamStreamCallbacks& callbacks,
                 const RequestSource& source)
      : decoder_(decoder), callbacks_(callbacks), source_(source) {}

  // Ends the stream with `failure` (onPoolFailure before ready, onStreamReset after).
  void fail(const UpstreamFailure& failure);
  // Takes the stream out of its pool (which deletes it, deferred).
  virtual void removeFromPool() = 0;
  // The connection's write watermarks, passed to the user while it holds the stream.
  void aboveWriteWatermark() {
    if (!done_) callbacks_.onAboveWriteBufferHighWatermark();
  }
  void belowWriteWatermark() {
    if (!done_) callbacks_.onBelowWriteBufferLowWatermark();
  }

  http::ResponseDecoder& decoder_;
  UpstreamStreamCallbacks& callbacks_;
  const RequestSource& source_;

  Buffer retry_body_;         // body to send on the retry's connection
  bool ready_ = false;        // the user got onPoolReady
  bool queued_ = false;       // in the pool's pending queue
  bool done_ = false;         // let go by the user, or failed
  bool retried_ = false;      // sent again once already
  bool request_end_ = false;  // the user encoded the request's end
  bool response_started_ = false;
  bool response_complete_ = false;
  bool read_disabled_ = false;

 private:
  friend class ConnPoolBase;
  // In the pool's list of streams (conn_pool_base.h): the older neighbour, owned by this one.
  std::unique_ptr<PoolStreamBase> pool_next_;
  PoolStreamBase* pool_prev_ = nullptr;
};

}  // namespace ferry::upstream
