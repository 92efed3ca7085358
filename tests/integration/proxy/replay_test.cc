// Replay through the filter chain, in process: a ferry::app::Server with a small test filter
// that turns "409 + x-replay-port" from upstream A into a replay of the request to upstream B
// (what owner forwarding will do with Streams-Replay-To), both upstreams scripted fakes.

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "app/server.h"
#include "tests/integration/proxy/support/fake_upstream.h"
#include "tests/integration/proxy/support/http_message.h"

namespace ferry::itest {
namespace {

// On a 409 carrying x-replay-port: hold the response, and at its end ask the stream to replay
// the request to 127.0.0.1:<port> with x-replayed: 1. A replay that cannot start (body over the
// replay limit) or fails before sending lets the held 409 through unchanged.
class ReplayOn409Filter : public http::StreamFilter {
 public:
  http::FilterStatus onResponseHeaders(http::ResponseHeaders& headers, bool) override {
    if (replayed_ || headers.status != 409) return http::FilterStatus::Continue;
    auto port = headers.headers.get("x-replay-port");
    if (!port) return http::FilterStatus::Continue;
    port_ = static_cast<uint16_t>(std::atoi(std::string(*port).c_str()));
    return http::FilterStatus::StopAndBuffer;
  }
  http::FilterStatus onResponseBody(Buffer&, bool end_stream) override {
    if (port_ == 0 || replayed_ || !end_stream) return http::FilterStatus::Continue;
    replayed_ = true;
    http::HeaderMap extra;
    extra.add("x-replayed", "1");
    if (!callbacks_->replay({{"other", "http", "127.0.0.1", port_, ""}, extra})) {
      return http::FilterStatus::Continue;
    }
    return http::FilterStatus::StopAndWait;
  }
  bool onUpstreamFailure(const upstream::UpstreamFailure& failure) override {
    if (!replayed_ || failure.request_bytes_sent) return false;
    callbacks_->continueResponse();
    return true;
  }

 private:
  uint16_t port_ = 0;
  bool replayed_ = false;
};

class ReplayOn409FilterFactory : public http::FilterFactory {
 public:
  http::StreamFilterPtr createFilter(event::WorkerContext&) const override {
    return std::make_unique<ReplayOn409Filter>();
  }
};

// A Server running on its own thread; drained and joined on destruction.
class InProcessFerry {
 public:
  explicit InProcessFerry(const config::FerryConfig& config) : server_(config) {
    server_.addFilter(std::make_shared<ReplayOn409FilterFactory>());
    Status started = server_.start();
    ok_ = started.isOk();
    if (ok_) thread_ = std::thread([this] { server_.run(); });
  }
  ~InProcessFerry() {
    if (thread_.joinable()) {
      server_.requestDrain();
      thread_.join();
    }
  }
  bool ok() const { return ok_; }
  app::Server& server() { return server_; }
  uint16_t port() const { return server_.listenerPort(); }

 private:
  app::Server server_;
  std::thread thread_;
  bool ok_ = false;
};

class ReplayTest : public ::testing::Test {
 protected:
  void startServer(uint32_t replay_limit, uint16_t b_port) {
    b_port_ = b_port;
    config::FerryConfig config;
    config.instance_name = "inst-1";
    config.listener.host = "127.0.0.1";
    config.listener.port = 0;
    config.local_instance.host = "127.0.0.1";
    config.local_instance.port = a_.port();
    config.admin = {"127.0.0.1", 0};
    config.workers = 1;
    config.limits.replay_buffer_bytes = replay_limit;
    config.timeouts.drain = std::chrono::seconds(2);
    config.forwarding.enabled = false;
    ferry_ = std::make_unique<InProcessFerry>(config);
    ASSERT_TRUE(ferry_->ok());
  }
  Socket connectClient() { return Socket::connectTo(ferry_->port()); }
  static std::string post(const std::string& body) {
    return "POST /v1/streams/s1/append?x=1 HTTP/1.1\r\nHost: h\r\nX-Client: c\r\n"
           "Content-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }
  std::string conflict() const {
    return "HTTP/1.1 409 Conflict\r\nx-replay-port: " + std::to_string(b_port_) +
           "\r\nContent-Length: 8\r\n\r\nconflict";
  }
  static std::string pattern(size_t size) {
    std::string s(size, 'a');
    for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>('a' + (i * 31 + i / 26) % 26);
    return s;
  }
  int64_t replays() { return static_cast<int64_t>(ferry_->server().stats().replays.value()); }

  FakeUpstream a_;
  FakeUpstream b_;
  uint16_t b_port_ = 0;
  std::unique_ptr<InProcessFerry> ferry_;
};

TEST_F(ReplayTest, ConflictIsReplayedToOtherUpstreamAndClientGetsItsAnswer) {
  startServer(64 * 1024, b_.port());
  const std::string body = pattern(10000);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(post(body)));
  auto at_a = a_.waitForRequest();
  ASSERT_TRUE(at_a);
  EXPECT_EQ(at_a->message.body, body);
  EXPECT_FALSE(at_a->message.header("x-replayed"));
  ASSERT_TRUE(at_a->connection->sendAll(conflict()));
  auto at_b = b_.waitForRequest();
  ASSERT_TRUE(at_b) << "nothing was replayed to B";
  EXPECT_EQ(at_b->message.method, "POST");
  EXPECT_EQ(at_b->message.path, "/v1/streams/s1/append?x=1");
  EXPECT_EQ(at_b->message.header("x-client"), "c");
  EXPECT_EQ(at_b->message.header("x-replayed"), "1");
  EXPECT_EQ(at_b->message.header("content-length"), std::to_string(body.size()));
  EXPECT_TRUE(at_b->message.body == body) << "B got a different body";
  ASSERT_TRUE(
      at_b->connection->sendAll("HTTP/1.1 200 OK\r\nX-From: b\r\nContent-Length: 6\r\n\r\nfrom-b"));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("x-from"), "b");
  EXPECT_FALSE(response->header("x-replay-port"));
  EXPECT_EQ(response->body, "from-b");
  EXPECT_EQ(replays(), 1);
}

TEST_F(ReplayTest, BodyOverReplayLimitPassesConflictThroughUnchanged) {
  startServer(1024, b_.port());
  const std::string body = pattern(4096);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(post(body)));
  auto at_a = a_.waitForRequest();
  ASSERT_TRUE(at_a);
  EXPECT_EQ(at_a->message.body, body);
  ASSERT_TRUE(at_a->connection->sendAll(conflict()));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 409);
  EXPECT_EQ(response->header("x-replay-port"), std::to_string(b_port_));
  EXPECT_EQ(response->body, "conflict");
  EXPECT_EQ(b_.waitForConnection(deadlineIn(std::chrono::milliseconds(100))), nullptr);
  EXPECT_EQ(replays(), 0);
}

TEST_F(ReplayTest, UnreachableReplayTargetPassesConflictThroughUnchanged) {
  startServer(64 * 1024, unusedPort());
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(post("payload")));
  auto at_a = a_.waitForRequest();
  ASSERT_TRUE(at_a);
  ASSERT_TRUE(at_a->connection->sendAll(conflict()));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 409);
  EXPECT_EQ(response->header("x-replay-port"), std::to_string(b_port_));
  EXPECT_EQ(response->body, "conflict");
  EXPECT_EQ(replays(), 1);
}

// A answers 409 after reading part of the body; the client is still uploading.
class ReplayMidUploadTest : public ReplayTest {
 protected:
  void run(bool wait_for_replay_before_rest) {
    startServer(64 * 1024, b_.port());
    const std::string body = pattern(32 * 1024);
    const size_t first_part = 8 * 1024;
    Socket client = connectClient();
    ASSERT_TRUE(client.sendAll(post(body).substr(0, post(body).size() - body.size() + first_part)));
    Socket* a = a_.waitForConnection();
    ASSERT_NE(a, nullptr);
    ASSERT_TRUE(readHead(*a, defaultDeadline(), true));
    auto part = a->readExactly(first_part, defaultDeadline());
    ASSERT_TRUE(part);
    ASSERT_TRUE(a->sendAll(conflict()));
    Socket* b = nullptr;
    if (wait_for_replay_before_rest) {
      b = b_.waitForConnection();
      ASSERT_NE(b, nullptr) << "nothing was replayed to B";
      auto head = readHead(*b, defaultDeadline(), true);
      ASSERT_TRUE(head);
      EXPECT_EQ(head->header("x-replayed"), "1");
      EXPECT_EQ(head->header("content-length"), std::to_string(body.size()));
    }
    ASSERT_TRUE(client.sendAll(body.substr(first_part)));
    if (!wait_for_replay_before_rest) {
      b = b_.waitForConnection();
      ASSERT_NE(b, nullptr) << "nothing was replayed to B";
      auto head = readHead(*b, defaultDeadline(), true);
      ASSERT_TRUE(head);
      EXPECT_EQ(head->header("x-replayed"), "1");
    }
    auto at_b = b->readExactly(body.size(), defaultDeadline());
    ASSERT_TRUE(at_b) << "B got " << b->buffered().size() << " of " << body.size() << " bytes";
    EXPECT_TRUE(*at_b == body) << "B's body differs (duplicated or reordered bytes)";
    // Exactly once: nothing follows the body.
    EXPECT_FALSE(b->anythingWithin(std::chrono::milliseconds(100))) << b->buffered().size();
    ASSERT_TRUE(b->sendAll("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    auto response = readResponse(client, defaultDeadline());
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "ok");
  }
};

TEST_F(ReplayMidUploadTest, RestOfBodySentAfterReplayStartedReachesBOnceInOrder) { run(true); }

TEST_F(ReplayMidUploadTest, RestOfBodySentRightAfterConflictReachesBOnceInOrder) { run(false); }

}  // namespace
}  // namespace ferry::itest
