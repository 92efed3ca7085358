// Tests filters/fault/fault_filter.cc against docs/fault-injection.md: only requests with the
// fault header are eligible; abort and delay at their percentages; a delay holds the request
// on a real dispatcher timer and then sends it on (or aborts it); a client that leaves during
// the delay cancels the timer. The stream is the recording fake
// (tests/support/http/fake_filter_callbacks.h).

#include "filters/fault/fault_filter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "filters/fault/fault_log.h"
#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/stats/stats.h"
#include "tests/support/event/run_for.h"
#include "tests/support/http/fake_filter_callbacks.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::filters {
namespace {

using namespace std::chrono_literals;
using http::FilterStatus;
using testing::runFor;
using testing::statOf;
using Call = testing::FakeFilterCallbacks::Call;

class FaultFilterTest : public ::testing::Test {
 protected:
  FaultFilterTest() : stats_(store_) {
    config_.stats = &stats_;
    callbacks_.forbid(Call::UpstreamFailureReply, "the fault filter answers no upstream failure");
    callbacks_.forbid(Call::InternalRequest, "the fault filter issues no internal request");
    config_.generator = allocateFaultGenerator(slots_);  // before the worker's context exists
    worker_ = std::make_unique<event::WorkerContext>(callbacks_.dispatcher(), slots_);
  }

  std::unique_ptr<FaultFilter> makeFilter() {
    auto filter = std::make_unique<FaultFilter>(config_, *worker_);
    filter->setCallbacks(callbacks_);
    return filter;
  }
  static http::RequestHeaders request(bool with_fault_header) {
    http::RequestHeaders headers;
    headers.method = "POST";
    headers.path = "/v1/stream/a";
    headers.authority = "x";
    if (with_fault_header) headers.headers.add("x-ferry-fault", "1");
    return headers;
  }
  // Runs the filter's request head; the filter is destroyed at the end as a stream does it.
  FilterStatus runHead(bool with_fault_header) {
    auto filter = makeFilter();
    auto headers = request(with_fault_header);
    FilterStatus status = filter->onRequestHeaders(headers, true);
    filter->onDestroy();
    return status;
  }
  std::optional<std::string> fault() const {
    auto value = callbacks_.info.get("fault");
    if (!value) return std::nullopt;
    return std::string(*value);
  }
  int64_t aborts() const { return statOf(store_, "ferry_fault_aborts_total"); }
  int64_t delays() const { return statOf(store_, "ferry_fault_delays_total"); }

  stats::Store store_;
  FaultStats stats_;
  FaultConfig config_;
  testing::FakeFilterCallbacks callbacks_;
  event::WorkerSlots slots_;
  std::unique_ptr<event::WorkerContext> worker_;  // the worker the filters run on
};

TEST_F(FaultFilterTest, AbortAtOneHundredPercentAnswersWithTheConfiguredStatus) {
  config_.abort_percent = 100;
  config_.abort_status = 429;
  EXPECT_EQ(runHead(true), FilterStatus::StopAndWait);
  ASSERT_EQ(callbacks_.local_replies.size(), 1u);
  EXPECT_EQ(callbacks_.local_replies[0].status, 429);
  EXPECT_EQ(callbacks_.local_replies[0].code, "fault_injected");
  EXPECT_EQ(callbacks_.continue_requests, 0);
  EXPECT_EQ(fault(), "abort");
  EXPECT_EQ(aborts(), 1);
  EXPECT_EQ(delays(), 0);
}

TEST_F(FaultFilterTest, ZeroPercentInjectsNothing) {
  config_.abort_percent = 0;
  config_.delay_percent = 0;
  for (int i = 0; i < 200; ++i) ASSERT_EQ(runHead(true), FilterStatus::Continue) << i;
  EXPECT_TRUE(callbacks_.local_replies.empty());
  EXPECT_EQ(fault(), std::nullopt);
  EXPECT_EQ(aborts(), 0);
  EXPECT_EQ(delays(), 0);
}

TEST_F(FaultFilterTest, RequestsWithoutTheHeaderAreNeverFaulted) {
  config_.abort_percent = 100;
  config_.delay_percent = 100;
  EXPECT_EQ(runHead(false), FilterStatus::Continue);
  EXPECT_TRUE(callbacks_.local_replies.empty());
  EXPECT_EQ(fault(), std::nullopt);
  EXPECT_EQ(aborts(), 0);
  EXPECT_EQ(delays(), 0);
}

TEST_F(FaultFilterTest, TheHeaderIsMatchedWhateverItsCase) {
  config_.abort_percent = 100;
  auto filter = makeFilter();
  auto headers = request(false);
  headers.headers.add("X-Ferry-Fault", "yes");
  EXPECT_EQ(filter->onRequestHeaders(headers, true), FilterStatus::StopAndWait);
  EXPECT_EQ(callbacks_.local_replies.size(), 1u);
}

TEST_F(FaultFilterTest, AnotherHeaderNameCanBeConfigured) {
  config_.abort_percent = 100;
  config_.header = "x-chaos";
  EXPECT_EQ(runHead(true), FilterStatus::Continue) << "x-ferry-fault is not the header now";
  auto filter = makeFilter();
  auto headers = request(false);
  headers.headers.add("x-chaos", "1");
  EXPECT_EQ(filter->onRequestHeaders(headers, true), FilterStatus::StopAndWait);
  EXPECT_EQ(callbacks_.local_replies.size(), 1u);
}

TEST_F(FaultFilterTest, APercentageFaultsTheDrawsBelowIt) {
  config_.abort_percent = 30;
  std::deque<uint32_t> draws = {29, 30, 0, 99};
  config_.roll = [&draws] {
    uint32_t next = draws.front();
    draws.pop_front();
    return next;
  };
  EXPECT_EQ(runHead(true), FilterStatus::StopAndWait);  // 29 < 30
  EXPECT_EQ(runHead(true), FilterStatus::Continue);     // 30
  EXPECT_EQ(runHead(true), FilterStatus::StopAndWait);  // 0
  EXPECT_EQ(runHead(true), FilterStatus::Continue);     // 99
  EXPECT_TRUE(draws.empty());
  EXPECT_EQ(aborts(), 2);
}

TEST_F(FaultFilterTest, TheWorkersGeneratorFaultsAboutThePercentage) {
  // The worker's generator (FaultConfig::generator): 2000 eligible requests at 50 %. Outside
  // 700..1300 is more than 13 standard deviations away (odds below 1e-38): a wrong range, not bad
  // luck.
  config_.abort_percent = 50;
  int aborted = 0;
  for (int i = 0; i < 2000; ++i) aborted += runHead(true) == FilterStatus::StopAndWait ? 1 : 0;
  EXPECT_GT(aborted, 700);
  EXPECT_LT(aborted, 1300);
  EXPECT_EQ(aborts(), aborted);
}

TEST_F(FaultFilterTest, DelayHoldsTheRequestThenSendsItOn) {
  config_.delay_percent = 100;
  config_.delay = 50ms;
  auto filter = makeFilter();
  auto headers = request(true);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(filter->onRequestHeaders(headers, true), FilterStatus::StopAndWait);
  EXPECT_EQ(callbacks_.continue_requests, 0);
  EXPECT_EQ(fault(), "delay");
  EXPECT_EQ(delays(), 1);
  // Until continueRequest(), at most 10 s.
  callbacks_.runUntil([this] { return callbacks_.continue_requests > 0; }, 10s);
  EXPECT_EQ(callbacks_.continue_requests, 1);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  EXPECT_TRUE(callbacks_.local_replies.empty());
  EXPECT_EQ(aborts(), 0);
  filter->onDestroy();
}

TEST_F(FaultFilterTest, DelayThenAbortAnswersAfterTheDelay) {
  config_.delay_percent = 100;
  config_.abort_percent = 100;
  config_.abort_status = 500;
  config_.delay = 50ms;
  auto filter = makeFilter();
  auto headers = request(true);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(filter->onRequestHeaders(headers, true), FilterStatus::StopAndWait);
  EXPECT_TRUE(callbacks_.local_replies.empty()) << "the abort waits for the delay";
  callbacks_.runUntil([this] { return !callbacks_.local_replies.empty(); }, 10s);
  ASSERT_EQ(callbacks_.local_replies.size(), 1u);
  EXPECT_EQ(callbacks_.local_replies[0].status, 500);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  EXPECT_EQ(callbacks_.continue_requests, 0);
  EXPECT_EQ(fault(), "delay_abort");
  EXPECT_EQ(delays(), 1);
  EXPECT_EQ(aborts(), 1);
  filter->onDestroy();
}

TEST_F(FaultFilterTest, ClientGoneDuringTheDelayCancelsTheTimer) {
  config_.delay_percent = 100;
  config_.abort_percent = 100;
  config_.delay = 20ms;
  auto filter = makeFilter();
  auto headers = request(true);
  EXPECT_EQ(filter->onRequestHeaders(headers, true), FilterStatus::StopAndWait);
  // The stream ends (the client left): onDestroy() now, the filter itself is deleted later
  // (the stream's deferred delete), so the timer must not outlive onDestroy().
  filter->onDestroy();
  runFor(callbacks_.dispatcher(), 200ms);  // ten delays: the timer would have fired
  EXPECT_EQ(callbacks_.continue_requests, 0);
  EXPECT_TRUE(callbacks_.local_replies.empty());
  EXPECT_EQ(aborts(), 0) << "the abort after the delay never happened";
  EXPECT_EQ(delays(), 1);
}

TEST(FaultLogTest, TheFieldIsNullWhenNoFaultWasInjected) {
  auto fields = faultLogFields();
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields[0].key, "fault");
  EXPECT_EQ(fields[0].absent, access_log::InfoField::Absent::Null);
}

}  // namespace
}  // namespace ferry::filters
