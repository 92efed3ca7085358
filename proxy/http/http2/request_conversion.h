#pragma once
// Turns one HTTP/2 request header block into RequestHeaders for the HTTP/1.1-shaped core
// (RFC 9113 §8.3.1, §8.2.3). The server codec feeds it each decoded field of a stream's request
// HEADERS (+ CONTINUATION) and asks for the result once the block ended.
//
// What nghttp2 already refused before a field gets here (its HTTP messaging checks, on by
// default): a missing, empty or repeated :method / :scheme / :path, :path not starting with "/"
// (or "*" for OPTIONS), a pseudo-header after a regular field, unknown or response
// pseudo-headers, connection-specific fields (connection, keep-alive, proxy-connection,
// transfer-encoding, upgrade), `te` other than "trailers", uppercase names, neither :authority
// nor host, two host fields, a content-length that is not a number or does not match the DATA.
// Field names with other invalid characters and values with CR, LF, NUL or surrounding
// whitespace reach the codec's on_invalid_header callback, which refuses the stream. Left to
// this class: the size limits, CONNECT and methods llhttp does not know (501, as on HTTP/1.1),
// userinfo in the authority, a host field that differs from :authority (400, RFC 9113 §8.3.1),
// an origin-form :path for schemes other than http(s) (nghttp2 checks it for those only), the
// conversion itself.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/http/codec.h"
#include "proxy/http/header_map.h"

namespace ferry::http::http2 {

class RequestHeadBuilder {
 public:
  RequestHeadBuilder(uint32_t max_bytes, uint32_t max_fields)
      : max_bytes_(max_bytes), max_fields_(max_fields) {}

  // One decoded field, in block order. Once a limit is exceeded the rest are only counted:
  // the stream will be answered with 431, and nothing of an oversized list is kept (an HPACK
  // bomb, a tiny block expanding to megabytes, costs no memory).
  void addField(std::string_view name, std::string_view value);

  // The header block ended. Either the converted head, or why the stream is refused
  // (`http_status` 0: answer with RST_STREAM; otherwise with that status).
  struct Result {
    RequestHeadersPtr headers;
    CodecError error;
  };
  Result finish();

  bool isHeadRequest() const { return head_ && head_->method == "HEAD"; }

 private:
  const uint32_t max_bytes_;
  const uint32_t max_fields_;
  uint64_t bytes_ = 0;
  uint32_t fields_ = 0;
  bool has_authority_ = false;  // :authority seen (it comes before every regular field)
  bool has_host_ = false;       // the host field, or one made from :authority, is in head_
  bool host_differs_ = false;   // a host field naming another authority (RFC 9113 §8.3.1)
  std::string scheme_;          // :scheme, to compare host with :authority
  std::string cookie_;          // crumbs joined with "; " (RFC 9113 §8.2.3)
  // Not make_unique: that would zero-fill the map's inline storage first (see HeaderMap()).
  RequestHeadersPtr head_ = std::make_unique_for_overwrite<RequestHeaders>();
};

}  // namespace ferry::http::http2
