#include "proxy/http/http1/field_syntax.h"

#include <array>
#include <string_view>

namespace ferry::http::http1 {

namespace {

// RFC 9110 §5.6.2 tchar, as a table: header names are checked for every encoded field.
constexpr std::array<bool, 256> kTchar = [] {
  std::array<bool, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

bool isTchar(char c) { return kTchar[static_cast<unsigned char>(c)]; }

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
