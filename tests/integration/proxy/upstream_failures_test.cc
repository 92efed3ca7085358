// Upstream failures that must answer every client promptly (issue 10, findings 6 and 7): a
// failed connect fails every request queued for that upstream, not only the oldest, and a
// request sent whole gets its response head within timeouts.response_head (live feeds
// excepted). Each test sets stream_idle far above its deadlines, so a request left waiting
// would show as a missing answer, not as a late 504.

#include <chrono>

#include "integration/harness/loopback.h"
#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

using testing::BlackholeListener;
using UpstreamFailuresTest = ProxyTest;
using std::chrono::milliseconds;

// Well below stream_idle (300 s), above the deadlines the tests set.
Deadline prompt() { return deadlineIn(std::chrono::seconds(8)); }

void expect503Unavailable(Socket& client, const std::string& which) {
  auto response = readResponse(client, prompt());
  ASSERT_TRUE(response) << which << " got no answer: " << client.buffered();
  EXPECT_EQ(response->status, 503) << which;
  EXPECT_EQ(response->header("retry-after"), "1") << which;
  EXPECT_NE(response->body.find("upstream_unavailable"), std::string::npos) << response->body;
}

// A black-holed upstream (full accept queue) and a cap of one connection: the second and third
// requests wait behind the first's connect. When it times out, all three get their 503.
TEST_F(UpstreamFailuresTest, ConnectTimeoutAnswersEveryQueuedRequest) {
  BlackholeListener blackhole;
  FerryConfigParams params;
  params.upstream_port = blackhole.port();
  params.upstream_max_connections = 1;
  params.upstream_connect = "1s";
  startFerry(params);
  std::vector<Socket> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(connectClient());
    ASSERT_TRUE(clients.back().sendAll(simpleGet("/queued-" + std::to_string(i))));
  }
  // All three wait in the pool before the connect gives up.
  ASSERT_TRUE(ferry_->waitForStat("ferry_streams_active", 3, deadlineIn(milliseconds(900))));
  for (int i = 0; i < 3; ++i) expect503Unavailable(clients[i], "request " + std::to_string(i));
  EXPECT_EQ(ferry_->stat("ferry_upstream_connect_timeouts_total"), 1);
  EXPECT_EQ(ferry_->stat("ferry_upstream_pending_failures_total"), 3);
  EXPECT_EQ(ferry_->stat("ferry_stream_idle_timeouts_total"), 0);
  EXPECT_EQ(ferry_->stat("ferry_downstream_resets_total"), 0) << "not client cancellations";
}

// The one pooled connection is busy when the upstream goes away: the two queued requests get a
// connect when it closes, which is refused; both are answered, not only the oldest.
TEST_F(UpstreamFailuresTest, RefusedConnectAnswersEveryQueuedRequest) {
  FerryConfigParams params;
  params.upstream_max_connections = 1;
  startFerry(params);
  Socket first = connectClient();
  ASSERT_TRUE(first.sendAll(simpleGet("/busy")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);  // holds the only connection, unanswered
  Socket second = connectClient();
  Socket third = connectClient();
  ASSERT_TRUE(second.sendAll(simpleGet("/queued-1")));
  ASSERT_TRUE(third.sendAll(simpleGet("/queued-2")));
  ASSERT_TRUE(ferry_->waitForStat("ferry_streams_active", 3));
  upstream_.close();  // stops listening and closes the busy connection
  auto busy = readResponse(first, prompt());
  ASSERT_TRUE(busy) << first.buffered();
  EXPECT_EQ(busy->status, 502) << "the busy request was sent: its outcome is unknown";
  expect503Unavailable(second, "second");
  expect503Unavailable(third, "third");
  EXPECT_GE(ferry_->stat("ferry_upstream_connect_failures_total"), 1);
  EXPECT_EQ(ferry_->stat("ferry_upstream_pending_failures_total"), 2);
  EXPECT_EQ(ferry_->stat("ferry_downstream_resets_total"), 0);
}

TEST_F(UpstreamFailuresTest, SilentUpstreamGets504AfterResponseHead) {
  FerryConfigParams params;
  params.response_head = "300ms";
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(
      client.sendAll("POST /v1/stream/s HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n"
                     "hello"));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);  // the upstream has all of it and says nothing (a stopped instance)
  EXPECT_EQ(request->message.body, "hello");
  auto response = readResponse(client, prompt());
  ASSERT_TRUE(response) << client.buffered();
  EXPECT_EQ(response->status, 504);
  EXPECT_NE(response->body.find("upstream_response_timeout"), std::string::npos) << response->body;
  EXPECT_EQ(ferry_->stat("ferry_upstream_response_head_timeouts_total"), 1);
  EXPECT_EQ(ferry_->stat("ferry_stream_idle_timeouts_total"), 0);
  EXPECT_EQ(ferry_->stat("ferry_downstream_resets_total"), 0);
  // The connection that may still answer is not reused: ferry closes it.
  EXPECT_TRUE(request->connection->waitForClose(prompt()));
}

// The clock starts when the request is sent whole: a slow upload is not an upstream that
// does not answer.
TEST_F(UpstreamFailuresTest, ResponseHeadClockStartsWhenTheRequestIsSent) {
  FerryConfigParams params;
  params.response_head = "300ms";
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(
      client.sendAll("POST /v1/stream/s HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n"
                     "he"));
  auto connection = upstream_.waitForConnection();
  ASSERT_NE(connection, nullptr);
  // The client takes longer than response_head to finish its body: the pacing is the
  // behaviour under test.
  EXPECT_FALSE(client.anythingWithin(milliseconds(600))) << client.buffered();
  ASSERT_TRUE(client.sendAll("llo"));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll(okResponse("done")));
  auto response = readResponse(client, prompt());
  ASSERT_TRUE(response) << client.buffered();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(ferry_->stat("ferry_upstream_response_head_timeouts_total"), 0);
}

// Long-polls and SSE feeds answer when data arrives: no response-head timeout for them
// (the contract: no timeout below 60 s).
TEST_F(UpstreamFailuresTest, LiveFeedsHaveNoResponseHeadTimeout) {
  FerryConfigParams params;
  params.response_head = "200ms";
  startFerry(params);
  for (const std::string target :
       {"/v1/stream/s?offset=-1&live=long-poll&timeout=5", "/v1/stream/s?live=sse",
        "/v1/streams/s/records:long-poll?cursor=1", "/v1/streams/s/records:sse",
        "/v1/stream/s?live=long%2Dpoll"}) {
    Socket client = connectClient();
    ASSERT_TRUE(client.sendAll(simpleGet(target)));
    auto request = upstream_.waitForRequest();
    ASSERT_TRUE(request) << target;
    // Three times response_head without an answer: the waiting is the behaviour under test.
    EXPECT_FALSE(client.anythingWithin(milliseconds(600))) << target << ": " << client.buffered();
    ASSERT_TRUE(request->connection->sendAll(okResponse("data")));
    auto response = readResponse(client, prompt());
    ASSERT_TRUE(response) << target;
    EXPECT_EQ(response->status, 200) << target;
  }
  EXPECT_EQ(ferry_->stat("ferry_upstream_response_head_timeouts_total"), 0);
}

}  // namespace
}  // namespace ferry::itest
