#include "filters/live_feeds/resume_schedule.h"

#include <gtest/gtest.h>

#include <vector>

namespace ferry::filters {
namespace {

using Millis = ResumeSchedule::Millis;
using Clock = ResumeSchedule::Clock;

TEST(ResumeScheduleTest, BacksOffFrom100MsDoublingTo2s) {
  ResumeSchedule schedule(Millis(60'000));
  const Clock::time_point t0{};
  std::vector<int64_t> delays;
  for (int i = 0; i < 7; ++i) delays.push_back(schedule.nextDelay(t0)->count());
  EXPECT_EQ(delays, (std::vector<int64_t>{100, 200, 400, 800, 1600, 2000, 2000}));
}

TEST(ResumeScheduleTest, RetryAfterIsWaitedForAndLeavesTheBackoffAlone) {
  ResumeSchedule schedule(Millis(30'000));
  const Clock::time_point t0{};
  EXPECT_EQ(schedule.nextDelay(t0, "1"), Millis(1'000));
  EXPECT_EQ(schedule.nextDelay(t0, " 3 "), Millis(3'000));
  EXPECT_EQ(schedule.nextDelay(t0), Millis(100));
}

TEST(ResumeScheduleTest, GivesUpWhenTheWaitWouldEndPastTheDeadline) {
  ResumeSchedule schedule(Millis(1'000));
  const Clock::time_point t0{};
  schedule.onBroken(t0);
  EXPECT_EQ(schedule.nextDelay(t0 + Millis(500), "0"), Millis(0));
  EXPECT_EQ(schedule.nextDelay(t0 + Millis(900)), Millis(100));   // ends at exactly 1,000
  EXPECT_EQ(schedule.nextDelay(t0 + Millis(900)), std::nullopt);  // would end at 1,100
  EXPECT_EQ(schedule.nextDelay(t0 + Millis(500), "2"), std::nullopt);
}

TEST(ResumeScheduleTest, DeadlineCountsFromTheBreakNotFromEachFailedAttempt) {
  ResumeSchedule schedule(Millis(1'000));
  const Clock::time_point t0{};
  schedule.onBroken(t0);
  schedule.onBroken(t0 + Millis(800));  // a failed resume attempt: the same break
  EXPECT_EQ(schedule.nextDelay(t0 + Millis(950)), std::nullopt);
}

TEST(ResumeScheduleTest, ARunningFeedStartsAfresh) {
  ResumeSchedule schedule(Millis(1'000));
  const Clock::time_point t0{};
  schedule.onBroken(t0);
  schedule.nextDelay(t0);
  schedule.nextDelay(t0);  // backoff now 400
  schedule.onRunning();
  EXPECT_FALSE(schedule.broken());
  EXPECT_EQ(schedule.nextDelay(t0 + Millis(5'000)), Millis(100));
  EXPECT_TRUE(schedule.broken());
}

TEST(ResumeScheduleTest, RetryAfterOnlyAsDeltaSeconds) {
  EXPECT_EQ(ResumeSchedule::parseRetryAfter("120"), Millis(120'000));
  EXPECT_EQ(ResumeSchedule::parseRetryAfter("0"), Millis(0));
  EXPECT_EQ(ResumeSchedule::parseRetryAfter(""), std::nullopt);
  EXPECT_EQ(ResumeSchedule::parseRetryAfter("-1"), std::nullopt);
  EXPECT_EQ(ResumeSchedule::parseRetryAfter("1.5"), std::nullopt);
  EXPECT_EQ(ResumeSchedule::parseRetryAfter("Wed, 21 Oct 2026 07:28:00 GMT"), std::nullopt);
  EXPECT_EQ(ResumeSchedule::parseRetryAfter("9999999999"), std::nullopt);
}

}  // namespace
}  // namespace ferry::filters
