#include "config/live_feeds_section.h"

#include "config/duration.h"
#include "config/header_field_name.h"

namespace ferry::config {

void readLiveFeeds(YamlReader& reader, const YAML::Node& node, const std::string& path,
                   LiveFeeds& out) {
  if (!reader.checkMap(
          node, path,
          {"resume", "resume_deadline", "share", "subscriber_buffer", "share_key_headers"})) {
    return;
  }
  reader.readBool(node, path, "resume", out.resume);
  // At least one backoff step (100 ms); a feed resumed for more than an hour is no longer
  // the client's feed.
  reader.readDuration(node, path, "resume_deadline", Millis(100), Millis(3'600'000),
                      out.resume_deadline);
  reader.readBool(node, path, "share", out.share);
  // At least a few events; at most what a worker could hold for a few thousand subscribers.
  reader.readUint32(node, path, "subscriber_buffer", 4 * 1024, 64 * 1024 * 1024,
                    out.subscriber_buffer);
  std::vector<std::string> headers;
  reader.readStringList(node, path, "share_key_headers", headers);
  for (size_t i = 0; i < headers.size(); ++i) {
    if (auto name = headerFieldName(headers[i])) {
      out.share_key_headers.push_back(*name);
    } else {
      reader.error(
          path + ".share_key_headers[" + std::to_string(i) + "]",
          "must be a header field name (a token, RFC 9110 §5.6.2; got \"" + headers[i] + "\")");
    }
  }
}

}  // namespace ferry::config
