#pragma once
// Turns the RequestHeaders the core encodes upstream into an HTTP/2 request field list for the
// client codec (RFC 9113 §8.3.1): the four pseudo-headers first (:method, :scheme,
// :authority, :path), then the regular fields, with the HTTP/1.1 connection-specific fields
// dropped (§8.2.2: Connection and every field it names, Keep-Alive, Proxy-Connection,
// Transfer-Encoding, Upgrade, and TE other than "trailers") and Host folded into :authority
// (§8.3.1: a client uses :authority rather than Host). The list points into this object and
// into `headers`; both must live until nghttp2_submit_request returned (nghttp2 copies them,
// lowercasing names as it does).

#include <nghttp2/nghttp2.h>

#include <string>
#include <string_view>
#include <vector>

#include "proxy/http/header_map.h"

namespace ferry::http::http2 {

class RequestFieldList {
 public:
  // `scheme` is "https" over TLS, "http" for h2c.
  RequestFieldList(const RequestHeaders& headers, std::string_view scheme);

  const nghttp2_nv* data() const { return nv_.data(); }
  size_t size() const { return nv_.size(); }

 private:
  std::string scheme_;
  std::vector<nghttp2_nv> nv_;
};

}  // namespace ferry::http::http2
