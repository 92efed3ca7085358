#pragma once
// Which requests are live feeds: answers that wait for data (a long-poll) or stay open (an SSE
// feed). The router starts no response-head timer for them, and at a drain's deadline the
// stream ends one cleanly instead of cutting it (ActiveStream::endLiveFeed). The rules are a
// router setting (RouterConfig::live_feeds): the composition root gives the upstream's URL
// conventions (Streams': app/streams_live_feeds.h); the router only applies them. No rules: no
// request is a live feed.

#include <string>
#include <string_view>
#include <vector>

namespace ferry::filters {

struct LiveFeedRules {
  std::vector<std::string> methods;        // only these methods (e.g. GET); empty: none
  std::vector<std::string> path_suffixes;  // the decoded path ends with one of these
  std::string query_parameter;             // or a query parameter of this (decoded) name...
  std::vector<std::string> query_values;   // ...has one of these (decoded) values

  // Percent-encoded forms count as decoded (the upstream decodes them too).
  bool matches(std::string_view method, std::string_view target) const;
};

}  // namespace ferry::filters
