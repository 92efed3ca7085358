// Tests tests/support/stats/stats_lookup.cc: a series ferry exports reads as its value, an
// absent series of an exported family as 0, and a family ferry does not export fails the test.
#include "tests/support/stats/stats_lookup.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

namespace ferry::testing {
namespace {

constexpr std::string_view kText =
    "# HELP ferry_upstream_reuses_total Requests sent on a reused connection\n"
    "# TYPE ferry_upstream_reuses_total counter\n"
    "ferry_upstream_reuses_total 7\n"
    "# HELP ferry_forward_skipped_total 409s passed on\n"
    "# TYPE ferry_forward_skipped_total counter\n"
    "ferry_forward_skipped_total{reason=\"marked\"} 2\n"
    "# HELP ferry_forward_attempts_total Requests forwarded\n"
    "# TYPE ferry_forward_attempts_total counter\n"
    "# HELP ferry_forward_latency_seconds latency\n"
    "# TYPE ferry_forward_latency_seconds histogram\n"
    "ferry_forward_latency_seconds_count{owner=\"a\"} 3\n"
    "# HELP ferry_streams_active Requests in flight\n"
    "# TYPE ferry_streams_active gauge\n"
    "ferry_streams_active -2\n";

TEST(SeriesValueTest, ReadsExportedSeries) {
  EXPECT_EQ(*seriesValue(kText, "ferry_upstream_reuses_total"), 7);
  EXPECT_EQ(*seriesValue(kText, "ferry_forward_skipped_total{reason=\"marked\"}"), 2);
  EXPECT_EQ(*seriesValue(kText, "ferry_forward_latency_seconds_count{owner=\"a\"}"), 3);
  EXPECT_EQ(*seriesValue(kText, "ferry_streams_active"), -2);
}

TEST(SeriesValueTest, AbsentSeriesOfAnExportedFamilyIsZero) {
  EXPECT_EQ(*seriesValue(kText, "ferry_forward_skipped_total{reason=\"self\"}"), 0);
  EXPECT_EQ(*seriesValue(kText, "ferry_forward_attempts_total{owner=\"inst-2\"}"), 0);
  EXPECT_EQ(*seriesValue(kText, "ferry_forward_latency_seconds_count{owner=\"b\"}"), 0);
}

TEST(SeriesValueTest, UnknownFamilyIsAnErrorNamingTheSeries) {
  auto typo = seriesValue(kText, "ferry_upstream_reuse_total");
  ASSERT_FALSE(typo.isOk());
  EXPECT_NE(typo.status().message().find("ferry_upstream_reuse_total"), std::string::npos);
  EXPECT_FALSE(seriesValue(kText, "ferry_forward_skiped_total{reason=\"self\"}").isOk());
  // A prefix of an exported name is not that name.
  EXPECT_FALSE(seriesValue(kText, "ferry_upstream_reuses").isOk());
  // _count is a suffix only of histograms.
  EXPECT_FALSE(seriesValue(kText, "ferry_upstream_reuses_total_count").isOk());
}

TEST(ExpectSeriesTest, FailsTheTestOnAnUnknownFamily) {
  EXPECT_NONFATAL_FAILURE(EXPECT_EQ(expectSeries(kText, "ferry_no_such_total"), kNoSuchSeries),
                          "ferry_no_such_total");
  EXPECT_EQ(expectSeries(kText, "ferry_forward_skipped_total{reason=\"self\"}"), 0);
}

TEST(StatOfTest, ReadsAStoreTheSameWay) {
  stats::Store store;
  store.counter("ferry_a_total", "a", {{"owner", "x"}}).inc(4);
  EXPECT_EQ(statOf(store, "ferry_a_total", {{"owner", "x"}}), 4);
  EXPECT_EQ(statOf(store, "ferry_a_total", {{"owner", "y"}}), 0);
  EXPECT_NONFATAL_FAILURE(statOf(store, "ferry_b_total"), "ferry_b_total");
}

}  // namespace
}  // namespace ferry::testing
