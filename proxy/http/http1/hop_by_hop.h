#pragma once
// Hop-by-hop field handling (RFC 9110 §7.6.1): the fixed list (isHopByHopHeader) plus every
// field the Connection header names. Decoders strip them from what they hand upward; encoders
// skip them defensively when writing a head.

#include <string>
#include <string_view>
#include <vector>

#include "proxy/http/header_map.h"

namespace ferry::http::http1 {

// The lower-cased, comma-separated tokens of every Connection field in `headers`.
std::vector<std::string> connectionTokens(const HeaderMap& headers);

// True when `name` is in the fixed hop-by-hop list or among `connection_tokens`.
bool isHopByHop(std::string_view name, const std::vector<std::string>& connection_tokens);

// Removes every hop-by-hop field, including those named by Connection, from `headers`.
// Content-Length is end-to-end framing information and is kept even if Connection names it.
void removeHopByHopFields(HeaderMap& headers);

}  // namespace ferry::http::http1
