// Tests proxy/http/http1/field_syntax.cc: isToken against RFC 9110's tchar list, for every byte
// value at every position of names around the 8-byte blocks it checks at once.
#include "proxy/http/http1/field_syntax.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace ferry::http::http1 {
namespace {

// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" /
// "~" / DIGIT / ALPHA (RFC 9110 §5.6.2).
bool referenceTchar(int c) {
  constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c != 0 && kSpecials.find(static_cast<char>(c)) != std::string_view::npos);
}

TEST(FieldSyntaxTest, IsTokenChecksEveryByteOfTheName) {
  for (size_t size = 1; size <= 18; ++size) {
    for (size_t at = 0; at < size; ++at) {
      for (int c = 0; c < 256; ++c) {
        std::string name(size, 'x');
        name[at] = static_cast<char>(c);
        EXPECT_EQ(isToken(name), referenceTchar(c)) << size << " " << at << " " << c;
      }
    }
  }
  EXPECT_FALSE(isToken(""));
  EXPECT_TRUE(isToken("X-Long-Name-That-Crosses-Blocks"));
}

}  // namespace
}  // namespace ferry::http::http1
