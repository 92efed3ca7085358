#pragma once
// The records of a JSON stream's SSE feed text, for tests that compare feeds by their records
// and offsets rather than by block boundaries (docs/live-feeds.md, "The invariant").

#include <string>

namespace ferry::testing {

// The data events' arrays joined, in order ("{..},{..}"); a data event cut off at the end of
// `feed` is left out.
inline std::string sseRecords(const std::string& feed) {
  std::string out;
  size_t at = 0;
  const std::string marker = "event: data\ndata:[";
  while ((at = feed.find(marker, at)) != std::string::npos) {
    at += marker.size();
    const size_t end = feed.find("]\n\n", at);
    if (end == std::string::npos) break;
    if (!out.empty()) out.push_back(',');
    out.append(feed, at, end - at);
    at = end;
  }
  return out;
}

// Where a feed read so far stands: the last control frame's streamNextOffset ("" if none).
inline std::string sseLastOffset(const std::string& feed) {
  const std::string key = "\"streamNextOffset\":\"";
  const size_t at = feed.rfind(key);
  if (at == std::string::npos) return "";
  const size_t from = at + key.size();
  return feed.substr(from, feed.find('"', from) - from);
}

}  // namespace ferry::testing
