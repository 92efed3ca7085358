// findNulCrLf / findNulCrLfOrBlank against a byte-by-byte reference: every length around the
// 16-byte blocks, every special byte at every position, several special bytes in one input.

#include "proxy/http/http1/byte_search.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace ferry::http::http1 {
namespace {

constexpr std::string_view kLineEnds("\0\r\n", 3);
constexpr std::string_view kLineEndsOrBlanks("\0\r\n \t", 5);

size_t reference(std::string_view bytes, std::string_view targets) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (targets.find(bytes[i]) != std::string_view::npos) return i;
  }
  return bytes.size();
}

// Ordinary text of `length` bytes, including bytes just above and below the special ones and
// bytes >= 0x80 (which a signed comparison could mistake for control characters).
std::string ordinary(size_t length) {
  const std::string_view pool =
      "ab:-/\x01\x0b\x0c\x0e\x1f!~\x7f\x80\xff"
      "09AZ";
  std::string s;
  for (size_t i = 0; i < length; ++i) s.push_back(pool[i % pool.size()]);
  return s;
}

TEST(ByteSearchTest, NoSpecialByteReturnsSize) {
  for (size_t length = 0; length <= 50; ++length) {
    const std::string s = ordinary(length);
    EXPECT_EQ(findNulCrLf(s), length) << length;
    EXPECT_EQ(findNulCrLfOrBlank(s), length) << length;
  }
}

TEST(ByteSearchTest, EverySpecialByteAtEveryPosition) {
  for (size_t length = 1; length <= 50; ++length) {
    for (size_t at = 0; at < length; ++at) {
      for (char special : kLineEndsOrBlanks) {
        std::string s = ordinary(length);
        s[at] = special;
        EXPECT_EQ(findNulCrLf(s), reference(s, kLineEnds))
            << "length " << length << " at " << at << " byte " << int(special);
        EXPECT_EQ(findNulCrLfOrBlank(s), reference(s, kLineEndsOrBlanks))
            << "length " << length << " at " << at << " byte " << int(special);
      }
    }
  }
}

TEST(ByteSearchTest, FirstOfSeveralWins) {
  // Two special bytes, the second in the same block or a later one: the first is found.
  for (size_t first = 0; first < 40; ++first) {
    for (size_t second = first + 1; second < 48; ++second) {
      std::string s = ordinary(48);
      s[first] = '\n';
      s[second] = '\0';
      EXPECT_EQ(findNulCrLf(s), first) << first << " " << second;
      s[first] = ' ';
      EXPECT_EQ(findNulCrLf(s), second) << first << " " << second;
      EXPECT_EQ(findNulCrLfOrBlank(s), first) << first << " " << second;
    }
  }
}

TEST(ByteSearchTest, SearchesOnlyInsideTheView) {
  // A special byte right after the view's end (in the same memory) is not found.
  const std::string s = ordinary(40) + "\r\n";
  for (size_t length = 0; length <= 40; ++length) {
    EXPECT_EQ(findNulCrLf(std::string_view(s).substr(0, length)), length);
    EXPECT_EQ(findNulCrLf(std::string_view(s).substr(40 - length, length)), length);
  }
}

}  // namespace
}  // namespace ferry::http::http1
