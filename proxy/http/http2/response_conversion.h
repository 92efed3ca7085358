#pragma once
// Turns ResponseHeaders from the HTTP/1.1-shaped core into an HTTP/2 field list (RFC 9113
// §8.3.2, §8.2.2): `:status` first, names lowercased, HTTP/1.1 connection-specific fields
// dropped. Used by the stream's encodeInformational / encodeHeaders; the list points into
// this object, which must live until nghttp2_submit_* returned (nghttp2 copies the fields).

#include <nghttp2/nghttp2.h>

#include <string>
#include <vector>

#include "proxy/http/header_map.h"

namespace ferry::http::http2 {

class ResponseFieldList {
 public:
  explicit ResponseFieldList(const ResponseHeaders& headers);

  const nghttp2_nv* data() const { return nv_.data(); }
  size_t size() const { return nv_.size(); }

 private:
  std::string status_;
  std::vector<nghttp2_nv> nv_;
};

}  // namespace ferry::http::http2
