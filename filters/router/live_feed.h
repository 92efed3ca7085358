#pragma once
// Recognises Streams' waiting reads and live feeds, which answer only when data arrives (a
// long-poll within 25 s, an SSE feed's head at once but its body for as long as it is open).
// The contract (docs/forwarding.md, "How it forwards") gives them no timeout below
// 60 s, so the router starts no response-head timer for them.

#include <string_view>

namespace ferry::filters {

// True for a GET whose target asks for a live answer: a `live=long-poll` or `live=sse` query
// parameter (raw stream routes), or a path ending in `:long-poll` or `:sse` (product routes).
// Percent-encoded forms count too: the instance decodes them.
bool isLiveFeed(std::string_view method, std::string_view target);

}  // namespace ferry::filters
