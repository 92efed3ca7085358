// The HTTP/1.1 pool seen from its user: a stream is one request/response, and the retry on a
// fresh connection after a stale keep-alive connection (RFC 9112 §9.3.1) happens inside the
// pool, unseen by the user, only under its rules. The upstream is a FakeUpstream scripted on a
// thread; the pool's loop runs on the test's thread until the user has its answer.

#include "proxy/upstream/http1_conn_pool.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "proxy/upstream/upstream_stats.h"
#include "tests/integration/proxy/support/fake_upstream.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::upstream {
namespace {

using itest::FakeUpstream;
using itest::TestThread;

std::string okResponse(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A stream's user, as the router's upstream request is: encodes its request when the pool is
// ready, keeps its body for the pool, records what comes back, and lets go at the end.
class FakeUser : public UpstreamStreamCallbacks,
                 public RequestSource,
                 public http::ResponseDecoder {
 public:
  FakeUser(event::Dispatcher& dispatcher, std::string method, std::string path, std::string body)
      : dispatcher_(dispatcher), body_(std::move(body)) {
    head_.method = std::move(method);
    head_.path = std::move(path);
    head_.authority = "upstream.test";
    if (!body_.empty()) head_.headers.add("content-length", std::to_string(body_.size()));
  }

  void onPoolReady(http::RequestEncoder& encoder, UpstreamStream& stream) override {
    ++ready;
    stream_ = &stream;
    encoder.encodeHeaders(head_, body_.empty());
    if (body_.empty()) return;
    Buffer data;
    data.add(body_);
    encoder.encodeData(data, true);
  }
  void onPoolFailure(const UpstreamFailure& failure) override {
    failures.push_back(failure);
    dispatcher_.exit();
  }
  void onStreamReset(const UpstreamFailure& failure) override {
    stream_ = nullptr;
    resets.push_back(failure);
    dispatcher_.exit();
  }
  void onRequestSent() override { ++sent; }
  void onAboveWriteBufferHighWatermark() override {}
  void onBelowWriteBufferLowWatermark() override {}
  const http::RequestHeaders& requestHead() const override { return head_; }
  bool copyRequestBody(Buffer& out) const override {
    out.add(body_);
    return true;
  }
  void onInformational(http::ResponseHeadersPtr) override {}
  void onResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) override {
    status = headers->status;
    if (end_stream) end();
  }
  void onResponseData(Buffer& data, bool end_stream) override {
    response_body += data.toString();
    data.clear();
    if (end_stream) end();
  }

  // Lets go of the stream (which releases the connection) now, from outside any callback:
  // after a response whose end found let_go_later set.
  void letGo() {
    stream_->resetStream();
    stream_ = nullptr;
  }

  bool let_go_later = false;  // the response's end keeps the stream for letGo()
  int ready = 0;
  int sent = 0;
  int status = 0;
  std::string response_body;
  std::vector<UpstreamFailure> failures;
  std::vector<UpstreamFailure> resets;

 private:
  void end() {
    // Complete both ways: the connection goes back to the pool (inside the read callback that
    // brought the response's end, unless let_go_later).
    if (!let_go_later) letGo();
    dispatcher_.exit();
  }
  event::Dispatcher& dispatcher_;
  http::RequestHeaders head_;
  std::string body_;
  UpstreamStream* stream_ = nullptr;
};

class Http1ConnPoolTest : public ::testing::Test {
 protected:
  Http1ConnPoolTest() : stats_(store_) {
    UpstreamTarget target;
    target.name = "local";
    target.scheme = "http";
    target.host = "127.0.0.1";
    target.port = upstream_.port();
    pool_ = std::make_unique<Http1ConnPool>(dispatcher_, target, PoolSettings{}, stats_);
  }

  // Runs the loop until the user has its answer (or a failure), bounded by a guard timer.
  void run(FakeUser& user) {
    EXPECT_EQ(pool_->newStream(user, user, user) != nullptr, true) << "no connection is idle";
    runLoop();
  }
  void runLoop() {
    auto guard = dispatcher_.createTimer([this] {
      ADD_FAILURE() << "the loop did not end";
      dispatcher_.exit();
    });
    guard->enable(event::Millis(10'000));
    dispatcher_.run();
  }
  // Lets the loop turn once, so that a released connection reaches the idle list.
  void turnLoop() {
    auto turn = dispatcher_.createTimer([this] { dispatcher_.exit(); });
    turn->enable(event::Millis(0));
    dispatcher_.run();
  }
  // Runs `start` (which begins a stream and runs the loop) while the upstream answers the
  // next request it reads with 200 and `body`; returns the connection that request came on.
  itest::Socket* answerOneRequest(const std::string& body, const std::function<void()>& start) {
    itest::Socket* connection = nullptr;
    {
      TestThread script([&] {
        auto request = upstream_.waitForRequest();
        ASSERT_TRUE(request);
        connection = request->connection;
        ASSERT_TRUE(request->connection->sendAll(okResponse(body)));
      });
      start();
    }
    return connection;
  }
  // A first GET answered on a keep-alive connection that the pool then keeps idle.
  itest::Socket* warmConnection() {
    FakeUser first(dispatcher_, "GET", "/1", "");
    itest::Socket* first_connection = answerOneRequest("1", [&] { run(first); });
    EXPECT_EQ(first.status, 200);
    turnLoop();
    return first_connection;
  }
  int64_t stat(const std::string& name) { return ferry::testing::statOf(store_, name); }

  FakeUpstream upstream_;
  event::Dispatcher dispatcher_;
  stats::Store store_;
  UpstreamStats stats_;
  std::unique_ptr<Http1ConnPool> pool_;
};

// The upstream reads the GET on the pooled connection and closes without answering, as a
// server whose keep-alive timer fired would: the pool sends it again on a fresh connection,
// and the user sees one ready stream and one answer.
TEST_F(Http1ConnPoolTest, GetOnStaleConnectionIsSentAgainInsideThePool) {
  itest::Socket* first_connection = warmConnection();
  FakeUser user(dispatcher_, "GET", "/2", "");
  std::string retried_path;
  itest::Socket* retried_connection = nullptr;
  {
    TestThread script([&] {
      auto crossed = upstream_.waitForRequest();
      ASSERT_TRUE(crossed);
      ASSERT_EQ(crossed->connection, first_connection);
      crossed->connection->close();
      auto retried = upstream_.waitForRequest();
      ASSERT_TRUE(retried);
      retried_path = retried->message.path;
      retried_connection = retried->connection;
      ASSERT_TRUE(retried->connection->sendAll(okResponse("fresh")));
    });
    // The idle connection serves at once: newStream() returns no waiting handle.
    EXPECT_EQ(pool_->newStream(user, user, user), nullptr);
    runLoop();
  }
  EXPECT_EQ(user.ready, 1);
  EXPECT_TRUE(user.resets.empty());
  EXPECT_EQ(user.status, 200);
  EXPECT_EQ(user.response_body, "fresh");
  EXPECT_EQ(retried_path, "/2");
  EXPECT_NE(retried_connection, first_connection);
  EXPECT_EQ(user.sent, 2);  // the request's end left twice: once per connection
  EXPECT_EQ(stat("ferry_upstream_reuses_total"), 1);
  EXPECT_EQ(stat("ferry_upstream_retries_total"), 1);
}

// A connection is given back to the pool inside the read callback that ended its response
// (warmConnection), and also when its user lets go outside any read callback (a timer, a
// client going away): then on the next loop turn. Either way the next GET reuses it.
TEST_F(Http1ConnPoolTest, ConnectionLetGoOutsideAReadCallbackIsReused) {
  FakeUser first(dispatcher_, "GET", "/1", "");
  first.let_go_later = true;
  itest::Socket* first_connection = answerOneRequest("1", [&] { run(first); });
  ASSERT_EQ(first.status, 200);
  first.letGo();  // the loop is not running: no read callback is under this call
  turnLoop();
  FakeUser second(dispatcher_, "GET", "/2", "");
  itest::Socket* second_connection = answerOneRequest("2", [&] {
    EXPECT_EQ(pool_->newStream(second, second, second), nullptr) << "no connection was idle";
    runLoop();
  });
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second_connection, first_connection);
  EXPECT_EQ(stat("ferry_upstream_reuses_total"), 1);
}

// A POST that reached the upstream may have been applied: never sent again; the user gets a
// reset that says bytes were sent.
TEST_F(Http1ConnPoolTest, PostOnStaleConnectionIsNotSentAgain) {
  warmConnection();
  FakeUser user(dispatcher_, "POST", "/pay", "money");
  {
    TestThread script([&] {
      auto post = upstream_.waitForRequest();
      ASSERT_TRUE(post);
      EXPECT_EQ(post->message.body, "money");
      post->connection->resetClose();
    });
    EXPECT_EQ(pool_->newStream(user, user, user), nullptr);
    runLoop();
  }
  EXPECT_EQ(user.ready, 1);
  ASSERT_EQ(user.resets.size(), 1u);
  EXPECT_EQ(user.resets[0].kind, UpstreamFailure::Kind::Reset);
  EXPECT_TRUE(user.resets[0].request_bytes_sent);
  EXPECT_EQ(stat("ferry_upstream_retries_total"), 0);
  EXPECT_EQ(stat("ferry_upstream_resets_total"), 1);
  EXPECT_FALSE(upstream_.waitForRequest(itest::deadlineIn(std::chrono::milliseconds(100))));
}

// A fresh connection that fails is the upstream's answer, not a stale one: no retry.
TEST_F(Http1ConnPoolTest, FreshConnectionClosedIsReportedNotRetried) {
  FakeUser user(dispatcher_, "GET", "/1", "");
  {
    TestThread script([&] {
      auto request = upstream_.waitForRequest();
      ASSERT_TRUE(request);
      request->connection->close();
    });
    run(user);
  }
  EXPECT_EQ(user.ready, 1);
  ASSERT_EQ(user.resets.size(), 1u);
  EXPECT_EQ(user.resets[0].kind, UpstreamFailure::Kind::Reset);
  EXPECT_EQ(stat("ferry_upstream_retries_total"), 0);
}

// Nothing listens: the user gets onPoolFailure (never ready), nothing was sent.
TEST_F(Http1ConnPoolTest, RefusedConnectIsAPoolFailure) {
  upstream_.close();
  FakeUser user(dispatcher_, "GET", "/1", "");
  run(user);
  EXPECT_EQ(user.ready, 0);
  ASSERT_EQ(user.failures.size(), 1u);
  EXPECT_EQ(user.failures[0].kind, UpstreamFailure::Kind::ConnectFailed);
  EXPECT_FALSE(user.failures[0].request_bytes_sent);
}

}  // namespace
}  // namespace ferry::upstream
