#pragma once
// What the HTTP/1.1 and HTTP/2 pools (http1_conn_pool.h, http2_conn_pool.h) do the same way
// with the streams they hand out: refusing a target they cannot reach, refusing a stream when
// too many wait, and keeping every stream they made until it is let go.

#include <string>

#include "proxy/http/codec.h"
#include "proxy/upstream/conn_pool.h"

namespace ferry::upstream {

// True (and onPoolFailure(Unsupported) told) when `target` is neither http nor https with
// client TLS configured: no stream is made for it.
inline bool refuseUnsupportedScheme(const http::UpstreamTarget& target,
                                    const PoolSettings& settings,
                                    UpstreamStreamCallbacks& callbacks) {
  if (target.scheme == "http" || (target.scheme == "https" && settings.tls != nullptr)) {
    return false;
  }
  http::UpstreamFailure failure;
  failure.kind = http::UpstreamFailure::Kind::Unsupported;
  failure.detail = target.scheme + " upstreams are not configured";
  callbacks.onPoolFailure(failure);
  return true;
}

// The failure of a stream refused because max_pending streams wait already.
inline http::UpstreamFailure overflowFailure(std::string detail) {
  http::UpstreamFailure failure;
  failure.kind = http::UpstreamFailure::Kind::Overflow;
  failure.detail = std::move(detail);
  return failure;
}

// Every stream a pool made and its user has not let go, linked through the streams' own
// prev_/next_ (the stream befriends this list), so that the pool deletes what is left when it
// goes with its worker.
template <class Stream>
class PoolStreamList {
 public:
  void add(Stream& stream) {
    stream.next_ = head_;
    if (head_ != nullptr) head_->prev_ = &stream;
    head_ = &stream;
  }
  void remove(Stream& stream) {
    if (stream.prev_ != nullptr) stream.prev_->next_ = stream.next_;
    if (stream.next_ != nullptr) stream.next_->prev_ = stream.prev_;
    if (head_ == &stream) head_ = stream.next_;
  }
  void deleteAll() {
    while (head_ != nullptr) {
      Stream* next = head_->next_;
      delete head_;
      head_ = next;
    }
  }

 private:
  Stream* head_ = nullptr;
};

}  // namespace ferry::upstream
