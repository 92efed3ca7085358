#include "filters/router/live_feed.h"

#include <string>

namespace ferry::filters {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 section 2.1 percent-decoding; a malformed escape stays as it is. In a query, '+'
// is a space (application/x-www-form-urlencoded), which no live value contains.
std::string decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = hexValue(s[i + 1]);
      int lo = hexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

bool isLiveFeed(std::string_view method, std::string_view target) {
  if (method != "GET") return false;
  const size_t query_at = target.find('?');
  const std::string path = decode(target.substr(0, query_at));
  if (endsWith(path, ":long-poll") || endsWith(path, ":sse")) return true;
  if (query_at == std::string_view::npos) return false;
  std::string_view query = target.substr(query_at + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = param.find('=');
    if (eq == std::string_view::npos || decode(param.substr(0, eq)) != "live") continue;
    const std::string value = decode(param.substr(eq + 1));
    if (value == "long-poll" || value == "sse") return true;
  }
  return false;
}

}  // namespace ferry::filters
