#include "proxy/http/http1/field_syntax.h"

#include <array>
#include <string_view>

#include "proxy/http/http1/byte_search.h"

namespace ferry::http::http1 {

namespace {

// RFC 9110 §5.6.2 tchar, as a table (1 = tchar): every parsed field name is checked.
constexpr std::array<unsigned char, 256> kTchar = [] {
  std::array<unsigned char, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c) t[c] = 1;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = 1;
  for (int c = '0'; c <= '9'; ++c) t[c] = 1;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = 1;
  return t;
}();

}  // namespace

bool isToken(std::string_view s) {
  // Names are nearly always tokens: AND the table entries of 8 bytes (4 for short names) with
  // no branch per byte; the last block overlaps the one before instead of a byte loop.
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  auto block8 = [&](size_t i) {
    return kTchar[p[i]] & kTchar[p[i + 1]] & kTchar[p[i + 2]] & kTchar[p[i + 3]] &
           kTchar[p[i + 4]] & kTchar[p[i + 5]] & kTchar[p[i + 6]] & kTchar[p[i + 7]];
  };
  auto block4 = [&](size_t i) {
    return kTchar[p[i]] & kTchar[p[i + 1]] & kTchar[p[i + 2]] & kTchar[p[i + 3]];
  };
  if (n < 4) {
    unsigned all = n != 0;
    for (size_t i = 0; i < n; ++i) all &= kTchar[p[i]];
    return all != 0;
  }
  if (n <= 8) return (block4(0) & block4(n - 4)) != 0;
  for (size_t i = 0; i + 8 < n; i += 8) {
    if (block8(i) == 0) return false;
  }
  return block8(n - 8) != 0;
}

bool isSafeFieldValue(std::string_view value) { return findNulCrLf(value) == value.size(); }

}  // namespace ferry::http::http1
