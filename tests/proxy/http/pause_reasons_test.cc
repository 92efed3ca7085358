// Tests proxy/http/pause_reasons.h: a side paused for two reasons stays paused until both
// cleared, and each add / remove says whether the side must pause / may resume now.

#include "proxy/http/pause_reasons.h"

#include <gtest/gtest.h>

namespace ferry::http {
namespace {

TEST(PauseReasonsTest, TwoReasonsHeldKeepTheSidePausedUntilBothClear) {
  PauseReasons reasons;
  EXPECT_TRUE(reasons.add(PauseReason::ConnectionShare)) << "the first reason pauses";
  EXPECT_FALSE(reasons.add(PauseReason::UpstreamWriteBufferFull)) << "already paused";
  EXPECT_FALSE(reasons.remove(PauseReason::ConnectionShare)) << "one reason is left";
  EXPECT_TRUE(reasons.paused());
  EXPECT_TRUE(reasons.has(PauseReason::UpstreamWriteBufferFull));
  EXPECT_FALSE(reasons.has(PauseReason::ConnectionShare));
  EXPECT_TRUE(reasons.remove(PauseReason::UpstreamWriteBufferFull)) << "the last reason resumes";
  EXPECT_FALSE(reasons.paused());
}

TEST(PauseReasonsTest, TheSameReasonTwiceIsOneReason) {
  PauseReasons reasons;
  EXPECT_TRUE(reasons.add(PauseReason::DownstreamWriteBufferFull));
  EXPECT_FALSE(reasons.add(PauseReason::DownstreamWriteBufferFull));
  EXPECT_TRUE(reasons.remove(PauseReason::DownstreamWriteBufferFull)) << "one remove clears it";
  EXPECT_FALSE(reasons.paused());
}

TEST(PauseReasonsTest, RemovingAReasonNotHeldChangesNothing) {
  PauseReasons reasons;
  EXPECT_FALSE(reasons.remove(PauseReason::ConnectionShare)) << "nothing to resume";
  reasons.add(PauseReason::UpstreamWriteBufferFull);
  EXPECT_FALSE(reasons.remove(PauseReason::ConnectionShare));
  EXPECT_TRUE(reasons.paused());
}

TEST(PauseReasonsTest, ClearResumesOnlyWhatWasPaused) {
  PauseReasons reasons;
  EXPECT_FALSE(reasons.clear());
  reasons.add(PauseReason::ConnectionShare);
  reasons.add(PauseReason::UpstreamWriteBufferFull);
  EXPECT_TRUE(reasons.clear());
  EXPECT_FALSE(reasons.paused());
}

}  // namespace
}  // namespace ferry::http
