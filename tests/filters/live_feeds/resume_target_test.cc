#include "filters/live_feeds/resume_target.h"

#include <gtest/gtest.h>

namespace ferry::filters {
namespace {

FeedPosition at(std::string offset, std::string cursor) {
  return FeedPosition{std::move(offset), std::move(cursor)};
}

TEST(ResumeTargetTest, ReplacesOffsetInPlaceAndKeepsOtherParameters) {
  EXPECT_EQ(resumeTarget("/s/a?offset=-1&live=sse", at("0000_0042", "c7")),
            "/s/a?offset=0000_0042&live=sse&cursor=c7");
}

TEST(ResumeTargetTest, ReplacesCursorOfTheProductRoute) {
  EXPECT_EQ(resumeTarget("/v1/streams/x/records:sse?cursor=5", at("9", "9")),
            "/v1/streams/x/records:sse?cursor=9&offset=9");
}

TEST(ResumeTargetTest, AppendsToATargetWithoutQuery) {
  EXPECT_EQ(resumeTarget("/v1/streams/x/records:sse", at("12", "12")),
            "/v1/streams/x/records:sse?offset=12&cursor=12");
}

TEST(ResumeTargetTest, OffsetNowIsReplacedByThePositionGiven) {
  EXPECT_EQ(resumeTarget("/s/a?live=sse&offset=now", at("77", "")), "/s/a?live=sse&offset=77");
}

TEST(ResumeTargetTest, FrameWithoutCursorRemovesTheRequestsCursor) {
  EXPECT_EQ(resumeTarget("/s/a?cursor=old&live=sse&offset=1", at("8", "")),
            "/s/a?live=sse&offset=8");
}

TEST(ResumeTargetTest, RepeatsAreDroppedAndEncodedNamesMatch) {
  EXPECT_EQ(resumeTarget("/s/a?offset=1&off%73et=2&live=sse&offset=3", at("9", "c")),
            "/s/a?offset=9&live=sse&cursor=c");
}

TEST(ResumeTargetTest, ValuesArePercentEncoded) {
  EXPECT_EQ(resumeTarget("/s/a?live=sse", at("a b&c", "x/y=z")),
            "/s/a?live=sse&offset=a%20b%26c&cursor=x%2Fy%3Dz");
}

TEST(ResumeTargetTest, EmptyParametersAndTrailingSeparatorsAreDropped) {
  EXPECT_EQ(resumeTarget("/s/a?&live=sse&&", at("4", "")), "/s/a?live=sse&offset=4");
  EXPECT_EQ(resumeTarget("/s/a?", at("4", "")), "/s/a?offset=4");
}

TEST(ResumeTargetTest, SimilarNamesAreNotTheParameter) {
  EXPECT_EQ(resumeTarget("/s/a?offsets=1&xoffset=2&cursorx=3", at("4", "5")),
            "/s/a?offsets=1&xoffset=2&cursorx=3&offset=4&cursor=5");
}

}  // namespace
}  // namespace ferry::filters
