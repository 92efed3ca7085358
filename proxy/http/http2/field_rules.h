#pragma once
// Rules both HTTP/2 field-list builders apply to the HTTP/1.1-shaped core's fields: the
// request side (request_fields.cc, client codec) and the response side
// (response_conversion.cc, server codec). Kept in one place so the two directions drop the
// same connection-specific fields (RFC 9113 §8.2.2) and refuse the same malformed ones.

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <string_view>

#include "proxy/http/header_map.h"

namespace ferry::http::http2 {

// An nghttp2 field pointing at `name` and `value` (no copy): they must outlive the
// nghttp2_submit_* call that takes the list, which copies them.
inline nghttp2_nv makeNv(std::string_view name, std::string_view value,
                         uint8_t flags = NGHTTP2_NV_FLAG_NONE) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), flags};
}

// `s` without leading and trailing spaces and tabs (RFC 9110 §5.6.3 OWS).
std::string_view trimSpaces(std::string_view s);

// True when `name` is one of the comma-separated options of the Connection fields (RFC 9110
// §7.6.1): those fields are meant for the HTTP/1.1 hop only. Options are trimmed of spaces
// and tabs and compared case-insensitively.
bool namedByConnection(std::string_view name, const HeaderMap& headers);

// False for a field nghttp2 would refuse to send or the peer would take as malformed (RFC 9113
// §8.2.1: an empty or pseudo-header name, CR/LF/NUL in the value). Callers leave such a field
// out rather than lose the whole message to it.
bool writable(const HeaderField& field);

}  // namespace ferry::http::http2
