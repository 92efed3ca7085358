// Tests proxy/stats/stats.cc: get-or-create, valueOf, and the Prometheus text the admin
// listener serves on /stats.

#include "proxy/stats/stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace ferry::stats {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> linesStartingWith(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

uint64_t sampleValue(const std::string& line) {
  return std::stoull(line.substr(line.rfind(' ') + 1));
}

TEST(StoreTest, GetOrCreateReturnsTheSameMetric) {
  Store store;
  Counter& a = store.counter("c_total", "help", {{"k", "v"}});
  Counter& b = store.counter("c_total", "help", {{"k", "v"}});
  Counter& other = store.counter("c_total", "help", {{"k", "w"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &other);
  a.inc();
  b.inc(4);
  other.inc();
  EXPECT_EQ(store.valueOf("c_total", {{"k", "v"}}), 5);
  EXPECT_EQ(store.valueOf("c_total", {{"k", "w"}}), 1);
  EXPECT_EQ(store.valueOf("c_total", {{"k", "x"}}), 0);
  EXPECT_EQ(store.valueOf("absent_total"), -1) << "no such family: not a plausible 0";
}

// A family whose series appear on first use (per owner) is listed from the start, so a reader
// can tell "none yet" (0) from "no such metric".
TEST(StoreTest, DeclaredFamiliesAreRenderedBeforeTheirFirstSeries) {
  Store store;
  store.declareCounter("per_owner_total", "by owner");
  store.declareHistogram("per_owner_seconds", "latency by owner");
  const std::string text = store.renderPrometheus();
  EXPECT_NE(text.find("# TYPE per_owner_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE per_owner_seconds histogram\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("per_owner_total{"), std::string::npos) << text;
  EXPECT_EQ(store.valueOf("per_owner_total", {{"owner", "a"}}), 0);
  store.counter("per_owner_total", "by owner", {{"owner", "a"}}).inc(2);
  EXPECT_EQ(store.valueOf("per_owner_total", {{"owner", "a"}}), 2);
}

TEST(StoreTest, GaugeValues) {
  Store store;
  Gauge& g = store.gauge("g", "a gauge");
  g.add(10);
  g.sub(3);
  EXPECT_EQ(store.valueOf("g"), 7);
  g.set(-2);
  EXPECT_EQ(store.valueOf("g"), -2);
}

TEST(RenderTest, LabelsInGivenOrderAndEscaped) {
  EXPECT_EQ(renderLabels({}), "");
  EXPECT_EQ(renderLabels({{"b", "1"}, {"a", "2"}}), "{b=\"1\",a=\"2\"}");
  EXPECT_EQ(renderLabels({{"v", "q\"b\\n\nx"}}), "{v=\"q\\\"b\\\\n\\nx\"}");
}

TEST(RenderTest, CountersWithLabels) {
  Store store;
  store.counter("ferry_forward_skipped_total", "409s passed", {{"reason", "self"}}).inc(3);
  store.counter("ferry_forward_skipped_total", "409s passed", {{"reason", "marked"}}).inc();
  store.counter("plain_total", "no labels").inc(7);
  std::string text = store.renderPrometheus();
  EXPECT_THAT(text, HasSubstr("# HELP ferry_forward_skipped_total 409s passed\n"
                              "# TYPE ferry_forward_skipped_total counter\n"));
  EXPECT_THAT(text, HasSubstr("\nferry_forward_skipped_total{reason=\"self\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("\nferry_forward_skipped_total{reason=\"marked\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE plain_total counter\nplain_total 7\n"));
  // One HELP/TYPE per family, not per series.
  EXPECT_EQ(linesStartingWith(text, "# TYPE ferry_forward_skipped_total").size(), 1u);
}

TEST(RenderTest, Gauges) {
  Store store;
  store.gauge("ferry_replay_held_bytes", "bytes", {{"w", "0"}}).set(-5);
  std::string text = store.renderPrometheus();
  EXPECT_THAT(text, HasSubstr("# TYPE ferry_replay_held_bytes gauge\n"));
  EXPECT_THAT(text, HasSubstr("ferry_replay_held_bytes{w=\"0\"} -5\n"));
}

TEST(RenderTest, HistogramBucketsAreCumulativeInSeconds) {
  Store store;
  Histogram& h = store.histogram("lat_seconds", "latency", {{"owner", "inst-b"}});
  // 50 == the first bound: le is inclusive. 1e9 is above every bound: +Inf only.
  const std::vector<uint64_t> observed = {10, 50, 51, 1000, 1'000'000'000};
  for (uint64_t v : observed) h.observeMicros(v);
  EXPECT_EQ(h.count(), 5u);
  EXPECT_EQ(h.sumMicros(), 10u + 50 + 51 + 1000 + 1'000'000'000);

  std::string text = store.renderPrometheus();
  EXPECT_THAT(text, HasSubstr("# TYPE lat_seconds histogram\n"));
  auto buckets = linesStartingWith(text, "lat_seconds_bucket{");
  const auto& bounds = Histogram::bucketBounds();
  ASSERT_EQ(buckets.size(), bounds.size() + 1);
  EXPECT_EQ(buckets.front(), "lat_seconds_bucket{owner=\"inst-b\",le=\"5e-05\"} 2");
  EXPECT_EQ(buckets[1], "lat_seconds_bucket{owner=\"inst-b\",le=\"0.0001\"} 3");
  EXPECT_EQ(buckets.back(), "lat_seconds_bucket{owner=\"inst-b\",le=\"+Inf\"} 5");
  // Cumulative: never decreasing, and the bucket holding 1000us (bound 1600us) counts 4.
  uint64_t prev = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    uint64_t v = sampleValue(buckets[i]);
    EXPECT_GE(v, prev) << buckets[i];
    prev = v;
    if (i < bounds.size()) {
      uint64_t expected = 0;
      for (uint64_t o : observed) expected += o <= bounds[i] ? 1 : 0;
      EXPECT_EQ(v, expected) << buckets[i];
    }
  }
  EXPECT_THAT(text, HasSubstr("lat_seconds_count{owner=\"inst-b\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("lat_seconds_sum{owner=\"inst-b\"} 1000.001111\n"));
}

TEST(RenderTest, HistogramWithoutLabels) {
  Store store;
  store.histogram("h_seconds", "h").observeMicros(60);
  std::string text = store.renderPrometheus();
  EXPECT_THAT(text, HasSubstr("h_seconds_bucket{le=\"5e-05\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("h_seconds_bucket{le=\"0.0001\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("h_seconds_bucket{le=\"+Inf\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("h_seconds_count 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("h_seconds_count{")));
}

}  // namespace
}  // namespace ferry::stats
