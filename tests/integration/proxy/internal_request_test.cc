// Internal requests (proxy/http/internal_request.h) through the real router and the worker's
// real pools to a FakeUpstream on 127.0.0.1 port 0, in process: a client stream (fake client
// side, stream_fakes.h) whose filter issues an internal GET. Shows over a socket what the unit
// tests (tests/proxy/http/internal_stream_test.cc) show with a fake terminal: the answer reaches
// the filter with the derived request id upstream; pause(true) stops reading the upstream
// connection and pause(false) resumes it; cancelling closes the upstream connection (the
// response was not complete); a connect that fails is a failure, not a response. The
// dispatcher runs on the test's thread; the upstream's script on a TestThread.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "filters/router/router_filter.h"
#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/http/active_stream.h"
#include "proxy/http/request_identity.h"
#include "proxy/upstream/upstream_stats.h"
#include "proxy/upstream/worker_upstreams.h"
#include "tests/integration/proxy/support/fake_upstream.h"
#include "tests/proxy/http/stream_fakes.h"
#include "tests/support/event/run_for.h"

namespace ferry::itest {
namespace {

using ::testing::ElementsAre;

// The issuing filter: on the client's request it issues an internal GET of the same path and
// holds the client's request; inside the internal request it lets it pass. Logs the answer.
class IssuingFilter : public http::StreamFilter, public http::InternalResponseCallbacks {
 public:
  explicit IssuingFilter(std::vector<std::string>& log) : log_(log) {}
  http::FilterStatus onRequestHeaders(http::RequestHeaders& head, bool) override {
    if (callbacks_->internalRequest()) return http::FilterStatus::Continue;
    handle =
        callbacks_->startInternalRequest(std::make_unique<http::RequestHeaders>(head), true, *this);
    return http::FilterStatus::StopAndWait;
  }
  void onDestroy() override { handle.reset(); }
  void onInternalResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) override {
    log_.push_back("headers " + std::to_string(headers->status) + (end_stream ? " end" : ""));
  }
  void onInternalResponseData(Buffer& data, bool end_stream) override {
    log_.push_back("data " + data.toString() + (end_stream ? " end" : ""));
    data.clear();
  }
  void onInternalRequestFailed(const upstream::UpstreamFailure& failure) override {
    log_.push_back("failed " + std::string(upstream::failureKindName(failure.kind)));
  }
  void onInternalResponseReset(const upstream::UpstreamFailure* failure) override {
    log_.push_back("reset");
  }
  http::StreamFilterCallbacks& callbacks() { return *callbacks_; }
  http::InternalRequestPtr handle;

 private:
  std::vector<std::string>& log_;
};

class IssuingFilterFactory : public http::FilterFactory {
 public:
  explicit IssuingFilterFactory(std::vector<std::string>& log) : log_(log) {}
  http::StreamFilterPtr createFilter(event::WorkerContext&) const override {
    auto filter = std::make_unique<IssuingFilter>(log_);
    if (first == nullptr) first = filter.get();
    return filter;
  }
  mutable IssuingFilter* first = nullptr;  // the client stream's

 private:
  std::vector<std::string>& log_;
};

class InternalRequestTest : public ::testing::Test {
 protected:
  InternalRequestTest() : proxy_stats_(store_), upstream_stats_(store_) {}

  // A client stream for GET `path` to the local instance at `port`; its filter issues the
  // internal request.
  void start(uint16_t port, const std::string& path) {
    upstream::UpstreamTarget local{"local", "http", "127.0.0.1", port, ""};
    settings_.local = local;
    const auto upstreams =
        upstream::WorkerUpstreams::allocateSlot(slots_, settings_, upstream_stats_);
    worker_ = std::make_unique<event::WorkerContext>(dispatcher_, slots_);
    filters::RouterConfig router;
    router.local = local;
    config_.terminal = std::make_shared<filters::RouterFilterFactory>(router, upstreams, store_);
    factory_ = std::make_shared<IssuingFilterFactory>(log_);
    config_.filters.push_back(factory_);
    stream_ =
        std::make_unique<http::ActiveStream>(owner_, encoder_, *worker_, config_, proxy_stats_);
    auto head = std::make_unique<http::RequestHeaders>();
    head->method = "GET";
    head->path = path;
    head->authority = "ferry.test";
    stream_->onRequestHeaders(std::move(head), true);
  }
  IssuingFilter& filter() { return *factory_->first; }
  // Runs the loop until `done` holds (checked every millisecond), at most 10 s.
  bool runUntil(const std::function<bool()>& done) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    event::TimerPtr check;
    check = dispatcher_.createTimer([&] {
      if (done() || std::chrono::steady_clock::now() > limit) {
        dispatcher_.exit();
        return;
      }
      check->enable(event::Millis(1));
    });
    check->enable(event::Millis(0));
    dispatcher_.run();
    return done();
  }
  bool logged(const std::string& line) const {
    return std::find(log_.begin(), log_.end(), line) != log_.end();
  }
  void TearDown() override {
    stream_.reset();
    ferry::testing::runFor(dispatcher_, std::chrono::milliseconds(1));  // deferred deletions
    worker_.reset();
  }

  event::Dispatcher dispatcher_;
  stats::Store store_;
  stats::ProxyStats proxy_stats_;
  upstream::UpstreamStats upstream_stats_;
  upstream::PoolSettings settings_;
  event::WorkerSlots slots_;
  std::unique_ptr<event::WorkerContext> worker_;  // the pools live in it
  http::StreamConfig config_;
  std::vector<std::string> log_;  // the filter's callbacks; the test's thread only
  std::shared_ptr<IssuingFilterFactory> factory_;
  http::testing::Log client_log_;
  http::testing::FakeStreamOwner owner_;
  http::testing::FakeResponseEncoder encoder_{client_log_};
  std::unique_ptr<http::ActiveStream> stream_;
  FakeUpstream upstream_;
};

TEST_F(InternalRequestTest, TheAnswerReachesTheFilterAndTheUpstreamSawTheDerivedId) {
  std::string seen_id;
  std::atomic<bool> answered{false};
  TestThread script([&] {
    auto request = upstream_.waitForRequest();
    if (!request) return;
    seen_id = request->message.header("x-request-id").value_or("");
    request->connection->sendAll("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    answered = true;
  });
  start(upstream_.port(), "/v1/stream/s1?live=sse");
  ASSERT_TRUE(runUntil([&] { return logged("data hello end"); })) << ::testing::PrintToString(log_);
  script.join();
  EXPECT_THAT(log_, ElementsAre("headers 200", "data hello end"));
  const std::string client_id(
      filter().callbacks().requestHeaders().headers.get(http::kRequestIdHeader).value());
  EXPECT_EQ(seen_id, client_id + "-r1");
  EXPECT_EQ(encoder_.header_calls, 0);
}

TEST_F(InternalRequestTest, PauseStopsReadingTheUpstreamAndResumeReadsOn) {
  Socket* upstream_connection = nullptr;
  TestThread script([&] {
    auto request = upstream_.waitForRequest();
    if (!request) return;
    upstream_connection = request->connection;
    request->connection->sendAll(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\none\r\n");
  });
  start(upstream_.port(), "/feed");
  ASSERT_TRUE(runUntil([&] { return logged("data one"); })) << ::testing::PrintToString(log_);
  script.join();
  filter().handle->pause(true);
  ASSERT_TRUE(upstream_connection->sendAll("3\r\ntwo\r\n"));  // in ferry's socket buffer now
  // Nothing is read while paused: the loop runs, the bytes wait in the socket.
  ferry::testing::runFor(dispatcher_, std::chrono::milliseconds(200));
  EXPECT_FALSE(logged("data two")) << "read while paused";
  filter().handle->pause(false);
  EXPECT_TRUE(runUntil([&] { return logged("data two"); })) << ::testing::PrintToString(log_);
}

TEST_F(InternalRequestTest, CancellingClosesTheUpstreamConnection) {
  Socket* upstream_connection = nullptr;
  TestThread script([&] {
    auto request = upstream_.waitForRequest();
    if (!request) return;
    upstream_connection = request->connection;
    request->connection->sendAll(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\none\r\n");
  });
  start(upstream_.port(), "/feed");
  ASSERT_TRUE(runUntil([&] { return logged("data one"); })) << ::testing::PrintToString(log_);
  script.join();
  filter().handle.reset();
  std::atomic<bool> closed{false};
  TestThread watch([&] { closed = upstream_connection->waitForClose(defaultDeadline()); });
  EXPECT_TRUE(runUntil([&] { return closed.load(); })) << "the upstream connection stayed open";
  watch.join();
  EXPECT_THAT(log_, ElementsAre("headers 200", "data one"));
}

TEST_F(InternalRequestTest, AFailedConnectIsAFailureNotAResponse) {
  start(unusedPort(), "/feed");
  ASSERT_TRUE(runUntil([&] { return !log_.empty(); }));
  EXPECT_THAT(log_, ElementsAre("failed connect_failed"));
}

}  // namespace
}  // namespace ferry::itest
