#include "config/live_feeds_section.h"

#include "config/duration.h"

namespace ferry::config {

void readLiveFeeds(YamlReader& reader, const YAML::Node& node, const std::string& path,
                   LiveFeeds& out) {
  if (!reader.checkMap(node, path, {"resume", "resume_deadline"})) return;
  reader.readBool(node, path, "resume", out.resume);
  // At least one backoff step (100 ms); a feed resumed for more than an hour is no longer
  // the client's feed.
  reader.readDuration(node, path, "resume_deadline", Millis(100), Millis(3'600'000),
                      out.resume_deadline);
}

}  // namespace ferry::config
