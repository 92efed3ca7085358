#include "filters/router/live_feed.h"

#include <string>

#include "filters/owner_forwarding/stream_key.h"

namespace ferry::filters {
namespace {

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

bool isLiveFeed(std::string_view method, std::string_view target) {
  if (method != "GET") return false;
  const size_t query_at = target.find('?');
  const std::string path = percentDecode(target.substr(0, query_at));
  if (endsWith(path, ":long-poll") || endsWith(path, ":sse")) return true;
  if (query_at == std::string_view::npos) return false;
  std::string_view query = target.substr(query_at + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = param.find('=');
    if (eq == std::string_view::npos || percentDecode(param.substr(0, eq)) != "live") continue;
    const std::string value = percentDecode(param.substr(eq + 1));
    if (value == "long-poll" || value == "sse") return true;
  }
  return false;
}

}  // namespace ferry::filters
