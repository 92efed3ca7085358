#pragma once
// "Another client is served throughout": runs one client request `count` times back to back
// while an attack holds, each on its own connection. Every request must be answered within
// 1 s (a loaded CI machine may deschedule either process for tens of ms; a starved client gets
// nothing at all); the median latency is returned for the test's tighter bound (100 ms).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace ferry::itest {

// `request(i)` sends request i and checks its answer (gtest assertions); a failed assertion
// there ends the loop.
inline std::chrono::microseconds medianLatencyOf(int count,
                                                 const std::function<void(int)>& request) {
  std::vector<std::chrono::microseconds> latencies;
  for (int i = 0; i < count; ++i) {
    const auto begin = std::chrono::steady_clock::now();
    request(i);
    if (::testing::Test::HasFatalFailure()) break;
    latencies.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - begin));
    EXPECT_LT(latencies.back(), std::chrono::milliseconds(1000)) << "request " << i;
  }
  if (latencies.empty()) {
    ADD_FAILURE() << "no request was answered";
    return std::chrono::hours(1);
  }
  std::sort(latencies.begin(), latencies.end());
  return latencies[latencies.size() / 2];
}

}  // namespace ferry::itest
