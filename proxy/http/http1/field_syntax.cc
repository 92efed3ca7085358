#include "proxy/http/http1/field_syntax.h"

namespace ferry::http::http1 {

namespace {

bool isTchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
    case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool isOws(char c) { return c == ' ' || c == '\t'; }

}  // namespace

bool isToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!isTchar(c)) return false;
  }
  return true;
}

bool isSafeFieldValue(std::string_view value) {
  // One pass (find_first_of would run a memchr over the set for every byte).
  for (char c : value) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && isOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && isOws(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace ferry::http::http1
