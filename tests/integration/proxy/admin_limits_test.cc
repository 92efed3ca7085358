// Issue #10, finding 5: the admin listener gets the data plane's limits. A head over
// limits.max_request_header_bytes is refused (431) without being buffered, a head not complete
// within timeouts.request_head (trickled, or never started) is closed, an idle keep-alive is
// closed after timeouts.keepalive_idle, and admin.max_connections caps open admin connections
// (503 past it). Each is counted in /stats. Timeouts are short here so the test waits on the
// close, never on a fixed sleep.

#include <string>
#include <thread>
#include <vector>

#include "tests/integration/proxy/support/proxy_test_base.h"
#include "tests/support/sanitizers.h"

namespace ferry::itest {
namespace {

class AdminLimitsTest : public ProxyTest {
 protected:
  void startWithAdmin(FerryConfigParams params, uint32_t admin_max_connections = 16) {
    params.upstream_port = upstream_.port();
    std::string yaml = renderConfig(params);
    const std::string plain = "admin: {address: 127.0.0.1, port: 0}";
    const size_t at = yaml.find(plain);
    ASSERT_NE(at, std::string::npos) << yaml;
    yaml.replace(at, plain.size(),
                 "admin: {address: 127.0.0.1, port: 0, max_connections: " +
                     std::to_string(admin_max_connections) + "}");
    std::string error;
    ferry_ = FerryProcess::start(yaml, &error);
    ASSERT_NE(ferry_, nullptr) << error;
  }
  Socket connectAdmin() {
    Socket s = Socket::connectTo(ferry_->adminPort());
    EXPECT_TRUE(s.valid());
    return s;
  }
};

TEST_F(AdminLimitsTest, OversizedHeadGets431WithoutBeingBuffered) {
  FerryConfigParams params;
  params.max_request_header_bytes = 4096;
  startWithAdmin(params);
  const long rss_before = ferry_->peakRssKiB();
  Socket client = connectAdmin();
  // 16 MiB of one header field; ferry answers and closes long before it is all sent.
  const std::string start = "GET /stats HTTP/1.1\r\nHost: admin\r\nX-Big: ";
  TestThread writer([&] {
    if (!client.sendAll(start)) return;
    const std::string chunk(64 * 1024, 'a');
    for (int i = 0; i < 256; ++i) {
      if (!client.sendAll(chunk)) return;  // ferry closed: expected
    }
  });
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response) << client.buffered();
  EXPECT_EQ(response->status, 431);
  EXPECT_TRUE(client.waitForClose(defaultDeadline()));
  writer.join();
  // Under AddressSanitizer freed memory sits in quarantine: RSS says nothing there.
  if (!kMemoryInflatedBySanitizer) {
    EXPECT_LT(ferry_->peakRssKiB() - rss_before, 8 * 1024) << "the oversized head was buffered";
  }
  EXPECT_EQ(ferry_->stat("ferry_admin_parse_errors_total"), 1);
}

TEST_F(AdminLimitsTest, TricklingHeadIsClosedAtRequestHead) {
  FerryConfigParams params;
  params.request_head = "300ms";
  startWithAdmin(params);
  Socket client = connectAdmin();
  ASSERT_TRUE(client.sendAll("GET /stats HTTP/1.1\r\n"));
  // One byte of a never-ending header every 50 ms: each byte must not move the deadline.
  const auto start = Clock::now();
  bool answered = false;
  for (int i = 0; i < 200 && !answered; ++i) {
    if (!client.sendAll("x")) break;  // closed
    answered = client.anythingWithin(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(answered) << "a trickling admin client was never closed";
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response) << client.buffered();
  EXPECT_EQ(response->status, 408);
  EXPECT_TRUE(client.waitForClose(defaultDeadline()));
  EXPECT_EQ(ferry_->stat("ferry_admin_request_head_timeouts_total"), 1);
}

TEST_F(AdminLimitsTest, SilentConnectionIsClosedAtRequestHead) {
  FerryConfigParams params;
  params.request_head = "300ms";
  startWithAdmin(params);
  Socket client = connectAdmin();
  EXPECT_TRUE(client.waitForClose(deadlineIn(std::chrono::seconds(5))))
      << "a silent admin connection was kept";
  EXPECT_TRUE(client.buffered().empty()) << client.buffered();
  EXPECT_EQ(ferry_->stat("ferry_admin_request_head_timeouts_total"), 1);
}

TEST_F(AdminLimitsTest, IdleKeepAliveIsClosedAtKeepaliveIdleAndServesUntilThen) {
  FerryConfigParams params;
  params.keepalive_idle = "300ms";
  startWithAdmin(params);
  Socket client = connectAdmin();
  // Two pipelined requests on one connection, then a HEAD: all answered in order.
  ASSERT_TRUE(
      client.sendAll("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
                     "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto first = readResponse(client, defaultDeadline());
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->body, "ok\n");
  auto second = readResponse(client, defaultDeadline());
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 404);
  ASSERT_TRUE(client.sendAll("HEAD /healthz HTTP/1.1\r\nHost: a\r\n\r\n"));
  auto head = readResponse(client, defaultDeadline(), /*head_request=*/true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  EXPECT_TRUE(client.waitForClose(defaultDeadline())) << "idle admin keep-alive never closed";
  EXPECT_TRUE(client.buffered().empty()) << client.buffered();
  EXPECT_EQ(ferry_->stat("ferry_admin_idle_timeouts_total"), 1);
}

TEST_F(AdminLimitsTest, MethodsOtherThanGetAndHeadAreRefused) {
  startWithAdmin({});
  Socket client = connectAdmin();
  ASSERT_TRUE(client.sendAll("POST /stats HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 405);
  EXPECT_EQ(response->header("allow"), "GET, HEAD");
  EXPECT_TRUE(client.waitForClose(defaultDeadline()));
  EXPECT_EQ(ferry_->stat("ferry_admin_parse_errors_total"), 1);
}

// A connection with a request in progress: answered once, then half of a second head sent
// with the first (so once the answer is read, ferry holds the half head).
Socket busyConnection(uint16_t admin_port) {
  Socket s = Socket::connectTo(admin_port);
  EXPECT_TRUE(s.valid());
  EXPECT_TRUE(s.sendAll("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /stats HTTP/1.1\r\n"));
  auto first = readResponse(s, defaultDeadline());
  EXPECT_TRUE(first && first->status == 200) << s.buffered();
  return s;
}

TEST_F(AdminLimitsTest, ConnectionsOverAdminMaxConnectionsGet503WhenNoneIsIdle) {
  FerryConfigParams params;
  params.request_head = "60s";  // the held connections stay open on their own
  startWithAdmin(params, 4);
  std::vector<Socket> held;
  // Each is answered before the next connects: all four are in before `over`, busy.
  for (int i = 0; i < 4; ++i) held.push_back(busyConnection(ferry_->adminPort()));
  Socket over = connectAdmin();
  auto response = readResponse(over, defaultDeadline());
  ASSERT_TRUE(response) << over.buffered();
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->header("retry-after"), "1");
  EXPECT_TRUE(over.waitForClose(defaultDeadline()));
  // A slot frees when a held connection leaves; /stats is served again and counted the refusal
  // (waitForStat retries while its own connection is still refused).
  held.pop_back();
  EXPECT_TRUE(ferry_->waitForStat("ferry_admin_connections_overflow_total", 1));
  EXPECT_EQ(ferry_->stat("ferry_downstream_connections_total"), 0)
      << "admin connections are not data-plane connections";
  EXPECT_EQ(ferry_->stat("ferry_admin_idle_evictions_total"), 0) << "a busy one was closed";
}

// Issue #21: sixteen idle admin connections (a monitor that leaks them) made /healthz answer
// 503 until the head timeout closed them. Probes must not be refusable by idle connections: a
// new connection at admin.max_connections closes the oldest idle one (no request in progress)
// and is served.
TEST_F(AdminLimitsTest, ProbesAreServedWithTheCapFullOfIdleConnections) {
  FerryConfigParams params;
  params.request_head = "60s";  // the idle connections stay open on their own
  params.keepalive_idle = "60s";
  startWithAdmin(params, 16);
  std::vector<Socket> idle;
  // Half never sent a byte, half were answered and kept alive; the last one was answered, so
  // all sixteen are in (ferry accepts in connection order).
  for (int i = 0; i < 16; ++i) {
    idle.push_back(connectAdmin());
    if (i % 2 == 0) continue;
    ASSERT_TRUE(idle.back().sendAll("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"));
    auto response = readResponse(idle.back(), defaultDeadline());
    ASSERT_TRUE(response) << idle.back().buffered();
    ASSERT_EQ(response->status, 200);
  }
  // Probes, one connection each (kept open: they join the idle ones), again and again.
  std::vector<Socket> probes;
  for (int round = 0; round < 20; ++round) {
    const std::string path = round % 2 == 0 ? "/healthz" : "/ready";
    probes.push_back(connectAdmin());
    ASSERT_TRUE(probes.back().sendAll("GET " + path + " HTTP/1.1\r\nHost: a\r\n\r\n"));
    auto response = readResponse(probes.back(), defaultDeadline());
    ASSERT_TRUE(response) << "round " << round << ": " << probes.back().buffered();
    EXPECT_EQ(response->status, 200) << "round " << round << " " << path << ": " << response->body;
  }
  // The oldest idle ones made room, first of all the one that never sent a byte.
  EXPECT_TRUE(idle[0].waitForClose(defaultDeadline()));
  EXPECT_TRUE(idle[0].buffered().empty()) << idle[0].buffered();
  EXPECT_EQ(ferry_->stat("ferry_admin_connections_overflow_total"), 0);
  EXPECT_GE(ferry_->stat("ferry_admin_idle_evictions_total"), 20);
}

}  // namespace
}  // namespace ferry::itest
