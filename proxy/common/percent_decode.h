#pragma once
// RFC 3986 §2.1 percent-decoding, once, for filters that read URL paths and query strings
// (the router's live-feed rules, owner forwarding's stream key). A leaf: no dependency.

#include <string>
#include <string_view>

namespace ferry {

// Decodes each "%XY" (X, Y hex digits) once; a malformed escape stays as it is (as Streams
// instances and most servers do).
std::string percentDecode(std::string_view in);

}  // namespace ferry
