#include "config/duration.h"

#include <gtest/gtest.h>

namespace ferry::config {
namespace {

TEST(DurationTest, ParsesUnits) {
  EXPECT_EQ(parseDuration("500ms"), Millis(500));
  EXPECT_EQ(parseDuration("10s"), Millis(10'000));
  EXPECT_EQ(parseDuration("2m"), Millis(120'000));
  EXPECT_EQ(parseDuration("1h"), Millis(3'600'000));
  EXPECT_EQ(parseDuration("1500"), Millis(1500));
  EXPECT_EQ(parseDuration("0"), Millis(0));
  EXPECT_EQ(parseDuration("0s"), Millis(0));
  EXPECT_EQ(parseDuration("007s"), Millis(7000));
}

TEST(DurationTest, RejectsEverythingElse) {
  for (const char* bad :
       {"", "10x", "s", "ms", "-5", "-5s", "1.5s", "10 s", " 10s", "10s ", "10S", "10sec", "1d",
        "1m30s", "+5", "0x10", "1e3", "1000000000000000ms", "999999999999h"}) {
    EXPECT_FALSE(parseDuration(bad).has_value()) << bad;
  }
}

TEST(DurationTest, Formats) {
  EXPECT_EQ(formatDuration(Millis(0)), "0ms");
  EXPECT_EQ(formatDuration(Millis(1)), "1ms");
  EXPECT_EQ(formatDuration(Millis(1500)), "1500ms");
  EXPECT_EQ(formatDuration(Millis(100)), "100ms");
  EXPECT_EQ(formatDuration(Millis(10'000)), "10s");
  EXPECT_EQ(formatDuration(Millis(90'000)), "90s");
  EXPECT_EQ(formatDuration(Millis(120'000)), "2m");
  EXPECT_EQ(formatDuration(kMaxDuration), "24h");
}

}  // namespace
}  // namespace ferry::config
