#pragma once
// Which live reads may share one upstream read (docs/live-feeds.md, "Sharing"): only reads a
// Streams instance could not tell apart. Pure functions; used by the live-feeds filter's hub
// (SSE feeds, which compare the read position separately, at a boundary) and by long-poll
// collapsing (which adds the position to the key).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/http/header_map.h"

namespace ferry::filters {

// The read position a request target names: its `offset` and `cursor` query parameters,
// percent-decoded, as the instance reads them (the first of repeats).
struct ReadPosition {
  std::optional<std::string> offset;  // none: the parameter is absent
  std::optional<std::string> cursor;
};
ReadPosition readPosition(std::string_view target);

// A key equal for two requests exactly when they have the same method, authority, path and
// query parameters other than `offset` and `cursor` (in order, as sent), and the same values
// (all of them, in order) of `Authorization`, `Cookie` and each of `extra_headers`
// (lower-case names; live_feeds.share_key_headers). Absent and empty differ. The key is opaque
// (length-prefixed parts: no two different requests give the same bytes).
std::string shareKey(const http::RequestHeaders& request,
                     const std::vector<std::string>& extra_headers);

}  // namespace ferry::filters
