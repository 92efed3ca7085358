#include "proxy/upstream/pool_stream_base.h"

namespace ferry::upstream {

void PoolStreamBase::onInformational(http::ResponseHeadersPtr headers) {
  if (done_) return;
  decoder_.onInformational(std::move(headers));
}

void PoolStreamBase::onResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) {
  if (done_) return;
  response_started_ = true;
  response_complete_ = end_stream;
  decoder_.onResponseHeaders(std::move(headers), end_stream);
}

void PoolStreamBase::onResponseData(Buffer& data, bool end_stream) {
  if (done_) return;
  response_complete_ = end_stream;
  decoder_.onResponseData(data, end_stream);
}

void PoolStreamBase::onResponseTrailers(http::HeaderMap trailers) {
  if (done_) return;
  response_complete_ = true;
  decoder_.onResponseTrailers(std::move(trailers));
}

void PoolStreamBase::fail(const UpstreamFailure& failure) {
  if (done_) return;
  done_ = true;
  // Out of the pool first: the user may start another stream from inside the callback.
  removeFromPool();
  if (ready_) {
    callbacks_.onStreamReset(failure);
  } else {
    callbacks_.onPoolFailure(failure);
  }
}

}  // namespace ferry::upstream
