#include "filters/live_feeds/live_feeds_log.h"

#include <string>

namespace ferry::filters {

access_log::InfoFields liveFeedsLogFields() {
  // In the order docs/access-log.md lists them.
  return {access_log::InfoField::optional("feed_resumes"),
          access_log::InfoField::optional("feed_shared")};
}

void recordFeedResumes(access_log::StreamInfo& info, uint32_t resumes) {
  info.set("feed_resumes", std::to_string(resumes));
}

void recordFeedShared(access_log::StreamInfo& info) { info.set("feed_shared", "true"); }

}  // namespace ferry::filters
