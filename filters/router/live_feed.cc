#include "filters/router/live_feed.h"

#include <algorithm>

#include "proxy/common/percent_decode.h"

namespace ferry::filters {
namespace {

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool contains(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

}  // namespace

bool LiveFeedRules::matches(std::string_view method, std::string_view target) const {
  if (!contains(methods, method)) return false;
  const size_t query_at = target.find('?');
  const std::string path = percentDecode(target.substr(0, query_at));
  for (const std::string& suffix : path_suffixes) {
    if (endsWith(path, suffix)) return true;
  }
  if (query_at == std::string_view::npos || query_parameter.empty()) return false;
  std::string_view query = target.substr(query_at + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = param.find('=');
    if (eq == std::string_view::npos || percentDecode(param.substr(0, eq)) != query_parameter) {
      continue;
    }
    if (contains(query_values, percentDecode(param.substr(eq + 1)))) return true;
  }
  return false;
}

}  // namespace ferry::filters
