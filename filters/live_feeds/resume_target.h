#pragma once
// Where a resumed live read starts: the client's request target with its read position
// replaced by the last position the client was given (docs/live-feeds.md, "Resume").
//
// Both Streams routes read the position from the query: the raw routes from `offset`, the
// product routes from `cursor` (or `offset`); a control frame gives both `streamNextOffset` and
// `streamCursor`. So a resume sets `offset` to the one and `cursor` to the other (a frame
// without a cursor removes the request's `cursor`), and keeps every other parameter, in order.
// Used by the live-feeds filter when it issues the next attempt of a feed; pure, no state.

#include <string>
#include <string_view>

#include "filters/live_feeds/sse_event_framer.h"

namespace ferry::filters {

// `target` is a request target in origin form ("/path?query"; no fragment). Returns it with
// `offset=<position.next_offset>` and `cursor=<position.cursor>` (each percent-encoded): a
// parameter already there is replaced at its first place and its repeats are dropped; one that
// is not there is appended. Parameter names are compared after percent-decoding, as the
// instance reads them.
std::string resumeTarget(std::string_view target, const FeedPosition& position);

}  // namespace ferry::filters
