#pragma once
// Hop-by-hop field handling (RFC 9110 §7.6.1): the fixed list (isHopByHopHeader) plus every
// field the Connection header names. Decoders strip them from what they hand upward; encoders
// skip them defensively when writing a head.

#include <string>
#include <string_view>

#include "proxy/http/header_map.h"

namespace ferry::http::http1 {

// The values of every Connection field in `headers`, joined by ',' into one list of connection
// options ("" when there is none). One string rather than a vector of tokens: it usually holds
// just "keep-alive" or "close", which fits in std::string's inline storage (no allocation).
std::string connectionOptions(const HeaderMap& headers);

// True when `name` is in the fixed hop-by-hop list or named in `connection_options` (as made by
// connectionOptions(); elements compare ignoring case and surrounding whitespace).
bool isHopByHop(std::string_view name, std::string_view connection_options);

// Removes every hop-by-hop field, including those named by Connection, from `headers`.
// Content-Length is end-to-end framing information and is kept even if Connection names it.
void removeHopByHopFields(HeaderMap& headers);

}  // namespace ferry::http::http1
