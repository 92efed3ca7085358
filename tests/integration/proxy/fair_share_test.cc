// Finding F1 over HTTP/1.1 (issue #21): requests whose bodies never come each hold an upstream
// connection. A request body that stalls gets 408 at timeouts.request_body_idle (and the
// connection closes); one address at limits.max_connections_per_client_address holds no more
// than that many connections, so a client from another address is served at once throughout.
// The HTTP/2 side (one connection holding every stream) is in
// tests/integration/http2/http2_attacks_test.cc.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/proxy/support/ok_upstream.h"
#include "tests/integration/proxy/support/proxy_test_base.h"
#include "tests/integration/proxy/support/served_throughout.h"

namespace ferry::itest {
namespace {

using namespace std::chrono_literals;

// A connection to 127.0.0.1:port from `source` (another loopback address: another client).
Socket connectFrom(const char* source, uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    ADD_FAILURE() << "connect from " << source << ": errno " << errno;
    ::close(fd);
    return Socket();
  }
  return Socket(fd);
}

// Waits until `upstream` holds `count` requests (a counter on another thread).
bool waitForHeld(const OkUpstream& upstream, int count, std::chrono::seconds within = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (upstream.held() != count && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  return upstream.held() == count;
}

constexpr const char* kStalledPost = "POST /hold HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n";

class FairShareTest : public ::testing::Test {
 protected:
  // ferry with timeouts.request_body_idle 1s.
  void startWithBodyTimeout() {
    FerryConfigParams params;
    params.timeouts_extra = ", request_body_idle: 1s";
    start(params);
  }
  void start(FerryConfigParams params) {
    params.upstream_port = upstream_.port();
    std::string error;
    ferry_ = FerryProcess::start(renderConfig(params), &error);
    ASSERT_NE(ferry_, nullptr) << error;
  }

  OkUpstream upstream_;
  std::unique_ptr<FerryProcess> ferry_;
};

TEST_F(FairShareTest, AStalledRequestBodyGets408AndTheConnectionCloses) {
  startWithBodyTimeout();
  Socket client = Socket::connectTo(ferry_->port());
  ASSERT_TRUE(client.valid());
  ASSERT_TRUE(client.sendAll(std::string(kStalledPost) + "12345"));  // half the body, then none
  ASSERT_TRUE(waitForHeld(upstream_, 1));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 408);
  EXPECT_NE(response->body.find("request_body_timeout"), std::string::npos) << response->body;
  EXPECT_EQ(response->header("connection"), "close");
  EXPECT_TRUE(client.waitForClose(defaultDeadline()));
  EXPECT_EQ(ferry_->stat("ferry_request_body_timeouts_total"), 1);
  EXPECT_TRUE(waitForHeld(upstream_, 0)) << "the upstream connection was not let go";
}

TEST_F(FairShareTest, BodyBytesResetTheBodyIdleClock) {
  // One byte per 300 ms for 2.4 s never leaves the body quiet for the whole second: no 408.
  // Then it stops, and the 408 comes.
  startWithBodyTimeout();
  Socket client = Socket::connectTo(ferry_->port());
  ASSERT_TRUE(client.valid());
  ASSERT_TRUE(client.sendAll("POST /hold HTTP/1.1\r\nHost: h\r\nContent-Length: 20\r\n\r\n"));
  for (int i = 0; i < 8; ++i) {
    EXPECT_FALSE(client.anythingWithin(300ms))
        << "answered while the body kept coming: " << client.buffered();
    ASSERT_TRUE(client.sendAll("x"));
  }
  EXPECT_EQ(ferry_->stat("ferry_request_body_timeouts_total"), 0);
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 408);
  EXPECT_EQ(ferry_->stat("ferry_request_body_timeouts_total"), 1);
}

TEST_F(FairShareTest, OneAddressAtItsConnectionLimitLeavesOtherClientsServed) {
  // A small pool makes the point quickly: 8 upstream connections, 4 connections per address.
  FerryConfigParams params;
  params.upstream_max_connections = 8;
  params.limits_extra = ", max_connections_per_client_address: 4";
  start(params);
  std::vector<Socket> attackers;
  int refused = 0;
  for (int i = 0; i < 8; ++i) {
    Socket s = Socket::connectTo(ferry_->port());
    ASSERT_TRUE(s.valid());
    if (s.sendAll(kStalledPost)) {
      attackers.push_back(std::move(s));
    } else {
      ++refused;  // refused so fast the write failed
    }
  }
  // Four are refused with 503 and Retry-After; four hold an upstream connection each. ferry
  // counts a refusal, then writes its 503 at once: wait for the counter and the held four, then
  // for the answers of the refused (a fixed window for "was it answered?" missed a 503 that a
  // loaded machine delivered late, and counted its connection as held).
  ASSERT_TRUE(ferry_->waitForStat("ferry_downstream_connections_per_address_overflow_total", 4));
  ASSERT_TRUE(waitForHeld(upstream_, 4));
  EXPECT_EQ(ferry_->stat("ferry_downstream_connections_per_address_overflow_total"), 4);
  std::vector<bool> answered(attackers.size(), false);
  for (const auto deadline = defaultDeadline();
       refused < 4 && std::chrono::steady_clock::now() < deadline;) {
    for (size_t i = 0; i < attackers.size() && refused < 4; ++i) {
      if (answered[i] || !attackers[i].anythingWithin(10ms)) continue;  // a poll, not a wait
      answered[i] = true;
      auto response = readResponse(attackers[i], defaultDeadline());
      ASSERT_TRUE(response) << attackers[i].buffered();
      EXPECT_EQ(response->status, 503);
      EXPECT_EQ(response->header("retry-after"), "1");
      ++refused;
    }
  }
  EXPECT_EQ(refused, 4);

  // A client from another address, throughout: answered at once (median under 100 ms; every
  // answer under 1 s, a loaded CI machine may deschedule a process). Without the limit the
  // 8 stalled requests fill the pool and this client waits.
  EXPECT_LT(medianLatencyOf(20,
                            [this](int i) {
                              Socket good = connectFrom("127.0.0.2", ferry_->port());
                              ASSERT_TRUE(good.valid());
                              ASSERT_TRUE(good.sendAll(
                                  "GET /ok HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
                              auto response = readResponse(good, deadlineIn(2s));
                              ASSERT_TRUE(response) << "request " << i << " not answered";
                              EXPECT_EQ(response->status, 200);
                            }),
            100ms);
  EXPECT_EQ(upstream_.held(), 4);
  // The address's slots come back as its connections close.
  attackers.clear();
  ASSERT_TRUE(waitForHeld(upstream_, 0));
  Socket again = Socket::connectTo(ferry_->port());
  ASSERT_TRUE(again.valid());
  ASSERT_TRUE(again.sendAll("GET /ok HTTP/1.1\r\nHost: h\r\n\r\n"));
  auto response = readResponse(again, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
}

}  // namespace
}  // namespace ferry::itest
