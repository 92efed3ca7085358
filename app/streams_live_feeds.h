#pragma once
// Streams' live feeds, given to the router as its live-feed rules (filters/router/live_feed.h)
// by the composition root (server.cc), and to the live-feeds filter as the reads it serves
// (filter_setup.cc). A Streams instance answers a waiting read only when data arrives (a
// long-poll, within 25 s) and keeps an SSE feed's body open for as long as the client reads
// (docs/streams-instance.md): a GET with `live=long-poll` or `live=sse` in its query (raw
// stream routes), or whose path ends in `:long-poll` or `:sse` (product routes).

#include <string>
#include <vector>

#include "filters/router/live_feed.h"
#include "proxy/http/header_map.h"

namespace ferry::app {

// The rules for Streams' live reads of `kinds` ("long-poll", "sse"): a GET with `live=<kind>` in
// its query, or whose path ends in `:<kind>`.
inline filters::LiveFeedRules streamsRulesFor(const std::vector<std::string>& kinds) {
  filters::LiveFeedRules rules;
  rules.methods = {"GET"};
  rules.query_parameter = "live";
  for (const std::string& kind : kinds) {
    rules.path_suffixes.push_back(":" + kind);
    rules.query_values.push_back(kind);
  }
  return rules;
}

inline filters::LiveFeedRules streamsLiveFeedRules() {
  return streamsRulesFor({"long-poll", "sse"});
}

// The SSE feeds among them.
inline filters::LiveFeedRules streamsSseRules() { return streamsRulesFor({"sse"}); }

// The long-polls among them (the live-feeds filter's LongPollFilter,
// filters/live_feeds/long_poll_filter.h).
inline filters::LiveFeedRules streamsLongPollRules() { return streamsRulesFor({"long-poll"}); }

// The live reads the live-feeds filter serves (streamsLiveFeedRules(), checked once per request;
// then the kind by streamsSseRules() / streamsLongPollRules()): not one another ferry forwarded
// here (`Streams-Forwarded`), whose client-side ferry resumes it.
inline bool isResumableStreamsFeed(const filters::LiveFeedRules& sse,
                                   const http::RequestHeaders& request) {
  // The rules first: most requests are not live reads, and they need no header lookup.
  return sse.matches(request.method, request.path) && !request.headers.has("streams-forwarded");
}

}  // namespace ferry::app
