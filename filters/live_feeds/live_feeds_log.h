#pragma once
// What the live-feeds filter tells the access log (docs/access-log.md): "feed_resumes", how many
// times the client's feed was resumed (absent for a request the filter did not serve), and
// "feed_shared", true when it was on a shared feed (live_feeds.share). Declared
// once at start by the composition root.

#include <cstdint>

#include "proxy/access_log/access_log.h"
#include "proxy/access_log/stream_info.h"

namespace ferry::filters {

access_log::InfoFields liveFeedsLogFields();
void recordFeedResumes(access_log::StreamInfo& info, uint32_t resumes);
// "feed_shared": the client's feed came from a shared upstream feed at some point.
void recordFeedShared(access_log::StreamInfo& info);

}  // namespace ferry::filters
