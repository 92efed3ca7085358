// The configured timeouts (request head, keep-alive idle, stream idle, upstream idle) and the
// admin's readiness while serving and while draining. Each timeout is set short here so the
// test waits on the event, never on a fixed sleep.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "integration/harness/loopback.h"
#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

using TimeoutsTest = ProxyTest;

TEST_F(TimeoutsTest, RequestHeadNotFinishedInTimeGets408AndClose) {
  FerryConfigParams params;
  params.request_head = "300ms";
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll("GET /slow-head HTTP/1.1\r\nHost: x\r\n"));  // no blank line
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response) << client.buffered();
  EXPECT_EQ(response->status, 408);
  EXPECT_NE(response->body.find("request_timeout"), std::string::npos) << response->body;
  EXPECT_TRUE(client.waitForClose(defaultDeadline()));
  EXPECT_EQ(ferry_->stat("ferry_request_head_timeouts_total"), 1);
  EXPECT_EQ(upstream_.connectionCount(), 0u) << "half a head must not reach the upstream";
}

// Issue #10, finding 8: the request-head timer runs from accept, so a connection that never
// sends a byte is closed at request_head (not kept until keepalive_idle).
TEST_F(TimeoutsTest, ConnectionThatSendsNothingIsClosedAtRequestHead) {
  FerryConfigParams params;
  params.request_head = "300ms";
  params.keepalive_idle = "60s";
  startFerry(params);
  Socket client = connectClient();
  const auto start = Clock::now();
  EXPECT_TRUE(client.waitForClose(deadlineIn(std::chrono::seconds(5))))
      << "a silent connection was kept past request_head";
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(client.buffered().empty()) << "nothing to answer: " << client.buffered();
  EXPECT_EQ(ferry_->stat("ferry_request_head_timeouts_total"), 1);
}

TEST_F(TimeoutsTest, IdleKeepAliveConnectionIsClosedAfterKeepaliveIdle) {
  FerryConfigParams params;
  params.keepalive_idle = "300ms";
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/one")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll(okResponse("one")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_NE(response->header("connection"), "close") << "the response itself keeps it alive";
  EXPECT_TRUE(client.waitForClose(defaultDeadline())) << "idle keep-alive was never closed";
  EXPECT_TRUE(client.buffered().empty()) << client.buffered();
}

TEST_F(TimeoutsTest, SilentUpstreamGets504AfterStreamIdle) {
  FerryConfigParams params;
  params.stream_idle = "300ms";
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/never-answered")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);  // the upstream has it and says nothing
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response) << client.buffered();
  EXPECT_EQ(response->status, 504);
  EXPECT_NE(response->body.find("stream_timeout"), std::string::npos) << response->body;
  EXPECT_EQ(ferry_->stat("ferry_stream_idle_timeouts_total"), 1);
  // The abandoned upstream request's connection is not reused: ferry closes it.
  EXPECT_TRUE(request->connection->waitForClose(defaultDeadline()));
}

TEST_F(TimeoutsTest, BytesMovingKeepAStreamAlivePastStreamIdle) {
  FerryConfigParams params;
  params.stream_idle = "300ms";
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/trickle")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(
      request->connection->sendAll("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"));
  // Eight chunks 100 ms apart: 800 ms in all, never 300 ms without a byte. The pacing is the
  // behaviour under test (activity re-arms the idle deadline), not a synchronisation.
  for (int i = 0; i < 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(request->connection->sendAll("1\r\nx\r\n"));
  }
  ASSERT_TRUE(request->connection->sendAll("0\r\n\r\n"));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response) << client.buffered();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "xxxxxxxx");
  EXPECT_EQ(ferry_->stat("ferry_stream_idle_timeouts_total"), 0);
}

TEST_F(TimeoutsTest, IdlePooledUpstreamConnectionIsClosedAfterUpstreamIdle) {
  FerryConfigParams params;
  params.upstream_idle = "300ms";
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/pooled")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll(okResponse("pooled")));
  ASSERT_TRUE(readResponse(client, defaultDeadline()));
  // ferry, not the upstream, closes the idle pooled connection (below the upstream's own
  // keep-alive timeout); the client's connection stays open.
  EXPECT_TRUE(request->connection->waitForClose(defaultDeadline()));
  EXPECT_FALSE(client.anythingWithin(std::chrono::milliseconds(50)));
}

using testing::BlackholeListener;

TEST_F(TimeoutsTest, UpstreamConnectTimeoutGets503WithRetryAfter) {
  BlackholeListener blackhole;
  FerryConfigParams params;
  params.upstream_port = blackhole.port();
  params.upstream_connect = "300ms";
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/unreachable")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response) << client.buffered();
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->header("retry-after"), "1");
  EXPECT_NE(response->body.find("upstream_unavailable"), std::string::npos) << response->body;
  EXPECT_EQ(ferry_->stat("ferry_upstream_connect_timeouts_total"), 1);
}

TEST_F(TimeoutsTest, AdminReadyIs200WhileServingAnd503WhileDraining) {
  startFerry();
  int status = 0;
  auto ready = ferry_->adminGet("/ready", &status);
  ASSERT_TRUE(ready);
  EXPECT_EQ(status, 200);
  auto health = ferry_->adminGet("/healthz", &status);
  ASSERT_TRUE(health);
  EXPECT_EQ(status, 200);
  // Keep a response in flight so that the drain lasts until the test ends it.
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/in-flight")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ferry_->signal(SIGTERM);
  bool saw_draining = false;
  for (Deadline deadline = defaultDeadline(); std::chrono::steady_clock::now() < deadline;) {
    auto body = ferry_->adminGet("/ready", &status);
    if (body && status == 503) {
      EXPECT_NE(body->find("draining"), std::string::npos) << *body;
      saw_draining = true;
      break;
    }
  }
  EXPECT_TRUE(saw_draining) << "/ready never answered 503 during the drain";
  ASSERT_TRUE(request->connection->sendAll(okResponse("done")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(ferry_->waitExit(defaultDeadline()));
}

TEST_F(TimeoutsTest, SeveralWorkersServeManyConnections) {
  FerryConfigParams params;
  params.workers = 3;
  startFerry(params);
  std::vector<Socket> clients;
  for (int i = 0; i < 8; ++i) clients.push_back(connectClient());
  for (auto& client : clients) {
    ASSERT_TRUE(client.sendAll(simpleGet("/w")));
    auto request = upstream_.waitForRequest();
    ASSERT_TRUE(request);
    ASSERT_TRUE(request->connection->sendAll(okResponse("w")));
    auto response = readResponse(client, defaultDeadline());
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
  }
  EXPECT_EQ(ferry_->stat("ferry_downstream_connections_total"), 8);
  // One thread per worker besides the main thread.
  size_t threads = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(ferry_->pid()) + "/task")) {
    (void)entry;
    ++threads;
  }
  EXPECT_GE(threads, 4u);
}

}  // namespace
}  // namespace ferry::itest
