#pragma once
// Reading one metric in a test, the same way everywhere (the forwarding cell's Ferry::stat(),
// the proxy tests' FerryProcess::stat(), unit tests on a stats::Store). A series is named by
// its exact text before the value: `ferry_upstream_reuses_total`,
// `ferry_forward_skipped_total{reason="marked"}`, `ferry_forward_latency_seconds_count{owner="a"}`.
//
// - the series is in the text: its value;
// - ferry exports the family (a `# TYPE <family>` line) but not this series: 0 (a labelled
//   series appears on first use);
// - ferry exports no such family: an error naming the series. A misspelt name must fail the
//   test, never pass an `EXPECT_EQ(stat(...), 0)`.

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/common/status.h"
#include "proxy/stats/stats.h"

namespace ferry::testing {

// What the checking lookups return after they failed the test.
inline constexpr int64_t kNoSuchSeries = -1;

// The value of `series` in Prometheus text (as GET /stats serves it).
StatusOr<int64_t> seriesValue(std::string_view prometheus_text, std::string_view series);

// seriesValue() as a test check: on an error, ADD_FAILURE() with the message, and kNoSuchSeries.
int64_t expectSeries(std::string_view prometheus_text, std::string_view series);

// The same on a Store (unit tests): `name` with `labels`, as /stats would render it.
int64_t statOf(const stats::Store& store, const std::string& name,
               const stats::Labels& labels = {});

}  // namespace ferry::testing
