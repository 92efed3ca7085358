#pragma once
// What the two live-read filters (live_feeds_filter.h: SSE feeds; long_poll_filter.h:
// long-polls) do alike with their client's stream (docs/live-feeds.md): which requests they
// serve, and how an answer the upstream cut after its head ends. Inline; no state.

#include <functional>

#include "proxy/http/filter.h"
#include "proxy/http/header_map.h"

namespace ferry::filters {

// Reads only: a bodiless GET that `is_ours` names (the configured rules), never an internal
// request (one a filter issued, running the listener's path again).
inline bool servesLiveRead(const http::StreamFilterCallbacks& callbacks,
                           const http::RequestHeaders& headers, bool end_stream,
                           const std::function<bool(const http::RequestHeaders&)>& is_ours) {
  return !callbacks.internalRequest() && end_stream && headers.method == "GET" && is_ours &&
         is_ours(headers);
}

// The upstream cut the answer after its head: the client's response stays cut (a local reply
// once the response started cuts it).
inline void sendUpstreamCut(http::StreamFilterCallbacks& callbacks) {
  callbacks.sendLocalReply(502, "upstream_reset", "the upstream cut its response", {});
}

}  // namespace ferry::filters
