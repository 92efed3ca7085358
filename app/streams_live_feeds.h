#pragma once
// Streams' live feeds, given to the router as its live-feed rules (filters/router/live_feed.h)
// by the composition root (server.cc), and to the live-feeds filter as the reads it serves
// (filter_setup.cc). A Streams instance answers a waiting read only when data arrives (a
// long-poll, within 25 s) and keeps an SSE feed's body open for as long as the client reads
// (docs/streams-instance.md): a GET with `live=long-poll` or `live=sse` in its query (raw
// stream routes), or whose path ends in `:long-poll` or `:sse` (product routes).

#include "filters/router/live_feed.h"
#include "proxy/http/header_map.h"

namespace ferry::app {

inline filters::LiveFeedRules streamsLiveFeedRules() {
  filters::LiveFeedRules rules;
  rules.methods = {"GET"};
  rules.path_suffixes = {":long-poll", ":sse"};
  rules.query_parameter = "live";
  rules.query_values = {"long-poll", "sse"};
  return rules;
}

// The SSE feeds among them.
inline filters::LiveFeedRules streamsSseRules() {
  filters::LiveFeedRules rules;
  rules.methods = {"GET"};
  rules.path_suffixes = {":sse"};
  rules.query_parameter = "live";
  rules.query_values = {"sse"};
  return rules;
}

// The long-polls among them (the long-poll filter's, filters/live_feeds/long_poll_filter.h).
inline filters::LiveFeedRules streamsLongPollRules() {
  filters::LiveFeedRules rules;
  rules.methods = {"GET"};
  rules.path_suffixes = {":long-poll"};
  rules.query_parameter = "live";
  rules.query_values = {"long-poll"};
  return rules;
}

// The SSE reads the live-feeds filter serves (`sse`: streamsSseRules()), and the long-polls the
// long-poll filter serves (streamsLongPollRules()): not one another ferry forwarded here
// (`Streams-Forwarded`), whose client-side ferry resumes it.
inline bool isResumableStreamsFeed(const filters::LiveFeedRules& sse,
                                   const http::RequestHeaders& request) {
  return !request.headers.has("streams-forwarded") && sse.matches(request.method, request.path);
}

}  // namespace ferry::app
