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
  ASSERT_TRUE(client.sendAll("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
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

TEST_F(AdminLimitsTest, ConnectionsOverAdminMaxConnectionsGet503) {
  FerryConfigParams params;
  params.request_head = "60s";  // the held connections stay open on their own
  startWithAdmin(params, 4);
  std::vector<Socket> held;
  // ferry accepts in connection order, so these four take the slots before `over`.
  for (int i = 0; i < 4; ++i) held.push_back(connectAdmin());
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
}

}  // namespace
}  // namespace ferry::itest
