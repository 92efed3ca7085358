// Drain and readiness the way orchestrators use them (issue 14): admin POST /drain and SIGTERM
// start one sequence (/ready 503 at once, timeouts.drain_delay still accepting, then the
// listener closes, `Connection: close` on the next response, live feeds ended with a last
// chunk at timeouts.drain), and /ready follows the local instance's /readyz.
// Real ferry and streams-emulator processes on loopback; every wait awaits a condition.

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "integration/harness/process.h"
#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using DrainTest = ProxyTest;

// Polls `condition` every 20 ms until it holds; false at the deadline.
template <typename F>
bool eventually(F condition, Deadline deadline = defaultDeadline()) {
  while (!condition()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

bool endsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST_F(DrainTest, PostDrainFailsReadyAtOnceAcceptsDuringDelayThenClosesTheListener) {
  FerryConfigParams params;
  params.drain_delay = "1500ms";
  params.drain = "20s";
  startFerry(params);
  // An idle keep-alive connection.
  Socket idle = connectClient();
  ASSERT_TRUE(idle.sendAll(simpleGet("/warm")));
  auto warm = upstream_.waitForRequest();
  ASSERT_TRUE(warm);
  ASSERT_TRUE(warm->connection->sendAll(okResponse("warm")));
  auto warmed = readResponse(idle, defaultDeadline());
  ASSERT_TRUE(warmed);
  EXPECT_FALSE(warmed->header("connection")) << warmed->raw_head;
  // A request in flight: the upstream holds its answer.
  Socket busy = connectClient();
  ASSERT_TRUE(busy.sendAll(simpleGet("/slow")));
  auto slow = upstream_.waitForRequest();
  ASSERT_TRUE(slow);

  const auto drain_started = Clock::now();
  auto accepted = ferry_->adminRequest("POST", "/drain");
  ASSERT_TRUE(accepted);
  EXPECT_EQ(accepted->status, 202);
  // /ready fails at once (load balancers and the kubelet stop sending).
  int status = 0;
  auto ready = ferry_->adminGet("/ready", &status);
  ASSERT_TRUE(ready);
  EXPECT_EQ(status, 503);
  EXPECT_EQ(*ready, "draining\n");
  // Liveness is not readiness: /healthz stays 200.
  ferry_->adminGet("/healthz", &status);
  EXPECT_EQ(status, 200);
  // Idempotent; a GET is not an action.
  auto again = ferry_->adminRequest("POST", "/drain");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 202);
  auto get = ferry_->adminRequest("GET", "/drain");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->header("allow"), "POST");

  // During drain_delay a new connection is still accepted and served.
  Socket late = connectClient();
  ASSERT_TRUE(late.sendAll(simpleGet("/late")));
  auto late_request = upstream_.waitForRequest();
  ASSERT_TRUE(late_request);
  ASSERT_TRUE(late_request->connection->sendAll(okResponse("late")));
  auto late_response = readResponse(late, defaultDeadline());
  ASSERT_TRUE(late_response);
  EXPECT_EQ(late_response->status, 200);
  EXPECT_LT(Clock::now() - drain_started, 1500ms) << "too slow to observe the drain delay";

  // After it the listener is closed: connects are refused, not left hanging.
  int error = 0;
  ASSERT_TRUE(eventually([&] {
    Socket probe = Socket::connectTo(ferry_->port(), &error);
    return !probe.valid();
  }));
  EXPECT_EQ(error, ECONNREFUSED);
  EXPECT_GE(Clock::now() - drain_started, 1500ms) << "the listener closed before drain_delay";
  // Idle keep-alives are closed (a FIN, no bytes).
  EXPECT_TRUE(idle.waitForClose(defaultDeadline()));
  EXPECT_TRUE(idle.buffered().empty()) << idle.buffered();
  EXPECT_FALSE(idle.reset());
  EXPECT_TRUE(late.waitForClose(defaultDeadline()));
  // The request in flight completes, and its response says the connection closes.
  ASSERT_TRUE(slow->connection->sendAll(okResponse("slow!")));
  auto done = readResponse(busy, defaultDeadline());
  ASSERT_TRUE(done) << busy.buffered();
  EXPECT_EQ(done->status, 200);
  EXPECT_EQ(done->body, "slow!");
  EXPECT_EQ(done->header("connection"), "close") << done->raw_head;
  EXPECT_TRUE(busy.waitForClose(defaultDeadline()));
  auto code = ferry_->waitExit(deadlineIn(std::chrono::seconds(10)));
  ASSERT_TRUE(code) << "ferry did not exit after the drain";
  EXPECT_EQ(*code, 0);
}

// A live feed open at the deadline ends as a complete response: its last chunk, then a FIN,
// so the client resumes from its offset without an error; a long-poll still waiting gets a
// 503 with Retry-After. A Content-Length body cannot end early: it is cut. All are counted
// (the exit line carries the counters: /stats is gone by then).
void liveFeedAtDeadline(ProxyTest& test, FakeUpstream& upstream,
                        std::unique_ptr<FerryProcess>& ferry, bool by_signal) {
  FerryConfigParams params;
  params.upstream_port = upstream.port();
  params.drain = "400ms";
  std::string error;
  ferry = FerryProcess::start(renderConfig(params), &error);
  ASSERT_NE(ferry, nullptr) << error;

  Socket feed = Socket::connectTo(ferry->port());
  ASSERT_TRUE(
      feed.sendAll("GET /v1/stream/s?offset=-1&live=sse HTTP/1.1\r\nHost: t\r\nAccept: "
                   "text/event-stream\r\n\r\n"));
  auto sse = upstream.waitForRequest();
  ASSERT_TRUE(sse);
  // A Streams feed's unit: a data event with the control frame that gives its end offset (the
  // live-feeds filter passes whole units only).
  const std::string frame =
      "event: data\ndata:[1]\n\nevent: control\ndata:{\"streamNextOffset\":\"1\"}\n\n";
  char size[16];
  std::snprintf(size, sizeof(size), "%zx", frame.size());
  ASSERT_TRUE(sse->connection->sendAll(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
      std::string(size) + "\r\n" + frame + "\r\n"));
  auto head = readHead(feed, defaultDeadline(), false);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  ASSERT_TRUE(feed.readUntil("data:[1]", defaultDeadline()));

  Socket download = Socket::connectTo(ferry->port());
  ASSERT_TRUE(download.sendAll("GET /file HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto file = upstream.waitForRequest();
  ASSERT_TRUE(file);
  ASSERT_TRUE(file->connection->sendAll("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf-"));
  ASSERT_TRUE(readHead(download, defaultDeadline(), false));

  // A long-poll the instance has not answered yet (held by the long-poll filter, which reads it
  // through an internal request: its 503 is the filter-held rule of ActiveStream::endLiveFeed).
  Socket poll = Socket::connectTo(ferry->port());
  ASSERT_TRUE(poll.sendAll("GET /v1/stream/s?offset=7&live=long-poll HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto waiting = upstream.waitForRequest();
  ASSERT_TRUE(waiting);

  int status = 0;
  if (by_signal) {
    ferry->signal(SIGTERM);
    EXPECT_TRUE(eventually([&] {
      ferry->adminGet("/ready", &status);
      return status == 503;
    }));
  } else {
    auto accepted = ferry->adminRequest("POST", "/drain");
    ASSERT_TRUE(accepted);
    EXPECT_EQ(accepted->status, 202);
    ferry->adminGet("/ready", &status);
    EXPECT_EQ(status, 503);
  }

  ASSERT_TRUE(feed.waitForClose(deadlineIn(std::chrono::seconds(10))));
  EXPECT_FALSE(feed.reset()) << "the feed was reset, not ended";
  EXPECT_TRUE(endsWith(feed.buffered(), "\r\n0\r\n\r\n")) << feed.buffered();
  ASSERT_TRUE(download.waitForClose(deadlineIn(std::chrono::seconds(10))));
  EXPECT_LT(download.buffered().size(), 10u) << "a Content-Length body cannot end early";
  // The waiting long-poll gets an answer it retries elsewhere, not a closed connection.
  auto retry = readResponse(poll, deadlineIn(std::chrono::seconds(10)));
  ASSERT_TRUE(retry) << poll.buffered();
  EXPECT_EQ(retry->status, 503);
  EXPECT_EQ(retry->header("retry-after"), "1");
  EXPECT_EQ(retry->header("connection"), "close");
  EXPECT_NE(retry->body.find("draining"), std::string::npos) << retry->body;
  EXPECT_TRUE(poll.waitForClose(defaultDeadline()));
  // ferry gave up the upstream side of the feed.
  EXPECT_TRUE(sse->connection->waitForClose(defaultDeadline()));
  auto code = ferry->waitExit(deadlineIn(std::chrono::seconds(10)));
  ASSERT_TRUE(code) << "ferry did not exit after the drain";
  EXPECT_EQ(*code, 0);
  EXPECT_NE(ferry->stderrText().find("ferry_drain_live_feeds_ended_total{end=\"last_chunk\"} 1, "
                                     "{end=\"retry_503\"} 1, ferry_drain_streams_cut_total 1"),
            std::string::npos)
      << ferry->stderrText();
}

// Live reads a filter holds with no answer yet get the waiting long-poll's 503 at the deadline
// (docs/live-feeds.md, "Long-polls": Drain): two long-polls collapsed onto one upstream
// long-poll (live_feeds.share), and an SSE read whose first head has not come. Without the
// rule they were cut.
TEST_F(DrainTest, LiveReadsFiltersHoldWithNoAnswerYetGetA503WithRetryAfterAtTheDeadline) {
  FerryConfigParams params;
  params.upstream_port = upstream_.port();
  params.drain = "400ms";
  params.extra_yaml = "live_feeds: {share: true}\n";
  std::string error;
  ferry_ = FerryProcess::start(renderConfig(params), &error);
  ASSERT_NE(ferry_, nullptr) << error;

  const std::string poll = "GET /v1/stream/s?offset=7&live=long-poll HTTP/1.1\r\nHost: t\r\n\r\n";
  Socket first = Socket::connectTo(ferry_->port());
  ASSERT_TRUE(first.sendAll(poll));
  auto shared = upstream_.waitForRequest();
  ASSERT_TRUE(shared);
  Socket second = Socket::connectTo(ferry_->port());
  ASSERT_TRUE(second.sendAll(poll));
  EXPECT_TRUE(eventually([&] {
    auto stats = ferry_->adminGet("/stats");
    return stats &&
           stats->find("ferry_live_feed_long_polls_collapsed_total 1") != std::string::npos;
  })) << "the second long-poll joined the first's";
  Socket sse = Socket::connectTo(ferry_->port());
  ASSERT_TRUE(sse.sendAll("GET /v1/stream/s?offset=-1&live=sse HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto feed = upstream_.waitForRequest();
  ASSERT_TRUE(feed);  // its head never comes

  auto accepted = ferry_->adminRequest("POST", "/drain");
  ASSERT_TRUE(accepted);
  for (Socket* client : {&first, &second, &sse}) {
    auto retry = readResponse(*client, deadlineIn(std::chrono::seconds(10)));
    ASSERT_TRUE(retry) << client->buffered();
    EXPECT_EQ(retry->status, 503);
    EXPECT_EQ(retry->header("retry-after"), "1");
    EXPECT_NE(retry->body.find("draining"), std::string::npos) << retry->body;
  }
  // The shared upstream long-poll ended with its last waiter, the feed's read with its client.
  EXPECT_TRUE(shared->connection->waitForClose(defaultDeadline()));
  EXPECT_TRUE(feed->connection->waitForClose(defaultDeadline()));
  auto code = ferry_->waitExit(deadlineIn(std::chrono::seconds(10)));
  ASSERT_TRUE(code) << "ferry did not exit after the drain";
  EXPECT_NE(ferry_->stderrText().find("{end=\"retry_503\"} 3, ferry_drain_streams_cut_total 0"),
            std::string::npos)
      << ferry_->stderrText();
}

TEST_F(DrainTest, PostDrainEndsALiveFeedAtTheDeadlineWithItsLastChunk) {
  liveFeedAtDeadline(*this, upstream_, ferry_, false);
}

TEST_F(DrainTest, SigtermEndsALiveFeedAtTheDeadlineWithItsLastChunk) {
  liveFeedAtDeadline(*this, upstream_, ferry_, true);
}

TEST_F(DrainTest, AdminRefusesPostElsewhereAndABodyOnDrain) {
  startFerry();
  auto post_stats = ferry_->adminRequest("POST", "/stats");
  ASSERT_TRUE(post_stats);
  EXPECT_EQ(post_stats->status, 405);
  EXPECT_EQ(post_stats->header("allow"), "GET, HEAD");
  Socket s = Socket::connectTo(ferry_->adminPort());
  ASSERT_TRUE(s.sendAll("POST /drain HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nnow"));
  auto refused = readResponse(s, defaultDeadline());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  // Neither started a drain.
  int status = 0;
  ferry_->adminGet("/ready", &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(ferry_->stat("ferry_draining"), 0);
  EXPECT_GE(ferry_->stat("ferry_admin_parse_errors_total"), 2);
}

// The emulator answers /readyz 503 "runtime draining" from its SIGTERM until it exits.
std::unique_ptr<testing::Process> startEmulator(uint16_t port, uint16_t* bound,
                                                const std::string& drain_seconds) {
  testing::ProcessOptions o;
  o.argv = {EMULATOR_BIN, "--name", "inst-1", "--members",          "inst-1",
            "--shards",   "4",      "--port", std::to_string(port), "--drain-seconds",
            drain_seconds};
  auto p = testing::Process::start(std::move(o));
  if (!p.isOk()) return nullptr;
  auto line = (*p)->waitForLine(R"(^streams-emulator inst-1 listening on 127\.0\.0\.1:(\d+)$)",
                                std::chrono::seconds(10));
  if (!line.isOk()) return nullptr;
  *bound = static_cast<uint16_t>(std::stoi(line->at(1)));
  return std::move(*p);
}

TEST(ReadinessProbeTest, ReadyFollowsTheLocalInstancesReadyz) {
  uint16_t port = 0;
  // Draining for a minute: long enough to be seen through ferry.
  auto emulator = startEmulator(0, &port, "60");
  ASSERT_NE(emulator, nullptr);
  FerryConfigParams params;
  params.upstream_port = port;
  params.local_instance_extra = ", readiness: {path: /readyz, interval: 100ms, timeout: 1s}";
  std::string error;
  auto ferry = FerryProcess::start(renderConfig(params), &error);
  ASSERT_NE(ferry, nullptr) << error;

  int status = 0;
  std::string body;
  auto readyIs = [&](int want) {
    return eventually([&] {
      auto b = ferry->adminGet("/ready", &status);
      body = b.value_or("");
      return status == want;
    });
  };
  ASSERT_TRUE(readyIs(200)) << body;
  EXPECT_EQ(ferry->stat("ferry_local_instance_ready"), 1);
  EXPECT_GE(ferry->stat("ferry_readiness_probes_total{result=\"ready\"}"), 1);

  // The instance drains: ferry's /ready fails, with the instance's reason.
  emulator->signal(SIGTERM);
  ASSERT_TRUE(readyIs(503)) << body;
  EXPECT_NE(body.find("local instance not ready"), std::string::npos) << body;
  EXPECT_NE(body.find("503: runtime draining"), std::string::npos) << body;
  EXPECT_EQ(ferry->stat("ferry_local_instance_ready"), 0);
  EXPECT_GE(ferry->stat("ferry_readiness_probes_total{result=\"not_ready\"}"), 1);
  ferry->adminGet("/healthz", &status);
  EXPECT_EQ(status, 200) << "/healthz is ferry's own liveness";

  // Gone: still not ready, now for want of a connection.
  emulator->stop(std::chrono::milliseconds(0));
  ASSERT_TRUE(eventually([&] {
    body = ferry->adminGet("/ready", &status).value_or("");
    return body.find("cannot connect") != std::string::npos;
  })) << body;
  EXPECT_EQ(status, 503);

  // A new instance on the same port: ready again.
  uint16_t again = 0;
  auto restarted = startEmulator(port, &again, "0");
  ASSERT_NE(restarted, nullptr);
  ASSERT_EQ(again, port);
  ASSERT_TRUE(readyIs(200)) << body;
  EXPECT_EQ(body, "ready\n");
  EXPECT_EQ(ferry->stat("ferry_local_instance_ready"), 1);
}

TEST_F(DrainTest, ReadinessProbeThatGetsNoAnswerFailsReadyAndRecovers) {
  FerryConfigParams params;
  params.local_instance_extra = ", readiness: {path: /readyz, interval: 100ms, timeout: 300ms}";
  startFerry(params);
  // The probe's request: GET of the configured path, closing after the answer.
  auto probe = upstream_.waitForRequest();
  ASSERT_TRUE(probe);
  EXPECT_EQ(probe->message.method, "GET");
  EXPECT_EQ(probe->message.path, "/readyz");
  EXPECT_EQ(probe->message.header("connection"), "close");
  EXPECT_EQ(probe->message.header("host"), "127.0.0.1:" + std::to_string(upstream_.port()));
  // No answer within the timeout: not ready, and the reason says so.
  int status = 0;
  std::string body;
  ASSERT_TRUE(eventually([&] {
    body = ferry_->adminGet("/ready", &status).value_or("");
    return body.find("no answer to GET /readyz within 300 ms") != std::string::npos;
  })) << body;
  EXPECT_EQ(status, 503);
  EXPECT_GE(ferry_->stat("ferry_readiness_probes_total{result=\"not_ready\"}"), 1);
  // Probes answered 200 (each as it comes; one the test was too slow for has timed out and
  // is followed by another): ready.
  ASSERT_TRUE(eventually([&] {
    if (auto next = upstream_.waitForRequest(deadlineIn(std::chrono::milliseconds(500)))) {
      next->connection->sendAll("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
    body = ferry_->adminGet("/ready", &status).value_or("");
    return status == 200;
  })) << body;
  EXPECT_EQ(ferry_->stat("ferry_local_instance_ready"), 1);
}

}  // namespace
}  // namespace ferry::itest
