#pragma once
// What the HTTP/1.1 and HTTP/2 pools (http1_conn_pool.h, http2_conn_pool.h) do the same way
// when asked for a stream: refusing a target they cannot reach, refusing a stream when too many
// wait. Keeping the streams is ConnPoolBase's (conn_pool_base.h).

#include <string>

#include "proxy/http/codec.h"
#include "proxy/upstream/conn_pool.h"

namespace ferry::upstream {

// True (and onPoolFailure(Unsupported) told) when `target` is neither http nor https with
// client TLS configured: no stream is made for it.
inline bool refuseUnsupportedScheme(const UpstreamTarget& target, const PoolSettings& settings,
                                    UpstreamStreamCallbacks& callbacks) {
  if (target.scheme == "http" || (target.scheme == "https" && settings.tls != nullptr)) {
    return false;
  }
  UpstreamFailure failure;
  failure.kind = UpstreamFailure::Kind::Unsupported;
  failure.detail = target.scheme + " upstreams are not configured";
  callbacks.onPoolFailure(failure);
  return true;
}

// The failure of a stream refused because max_pending streams wait already.
inline UpstreamFailure overflowFailure(std::string detail) {
  UpstreamFailure failure;
  failure.kind = UpstreamFailure::Kind::Overflow;
  failure.detail = std::move(detail);
  return failure;
}

}  // namespace ferry::upstream
