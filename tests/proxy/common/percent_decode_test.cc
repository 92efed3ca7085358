// percentDecode (proxy/common/percent_decode.h): once, and malformed escapes kept.
#include "proxy/common/percent_decode.h"

#include <gtest/gtest.h>

namespace ferry {
namespace {

TEST(PercentDecodeTest, DecodesEachEscapeOnce) {
  EXPECT_EQ(percentDecode("a%2Fb"), "a/b");
  EXPECT_EQ(percentDecode("%41%62"), "Ab");
  EXPECT_EQ(percentDecode("%2541"), "%41");  // once: the result is not decoded again
  EXPECT_EQ(percentDecode("%e2%82%ac"), "\xe2\x82\xac");
}

TEST(PercentDecodeTest, KeepsMalformedEscapes) {
  EXPECT_EQ(percentDecode("%zz"), "%zz");
  EXPECT_EQ(percentDecode("50%"), "50%");
  EXPECT_EQ(percentDecode("%4"), "%4");
  EXPECT_EQ(percentDecode("%4g%41"), "%4gA");
}

}  // namespace
}  // namespace ferry
