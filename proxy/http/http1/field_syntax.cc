#include "proxy/http/http1/field_syntax.h"

#include <array>
#include <string_view>

#include "proxy/http/http1/byte_search.h"

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

}  // namespace

bool isToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!isTchar(c)) return false;
  }
  return true;
}

bool isSafeFieldValue(std::string_view value) { return findNulCrLf(value) == value.size(); }

}  // namespace ferry::http::http1
