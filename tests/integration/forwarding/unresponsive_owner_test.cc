// Owners that do not answer (issue 10, findings 6 and 7), per the contract's Failures table:
// a connect to the owner that times out returns the local 409 unchanged, to every client
// waiting for that owner, promptly; an owner that took the whole request and sends no response
// head (a stopped process) gives 503 forward_failed after timeouts.response_head.
#include <poll.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "integration/harness/loopback.h"
#include "tests/integration/forwarding/forwarding_test.h"

namespace ferry::fwdtest {
namespace {

constexpr size_t kEntry = 0;
constexpr size_t kOwner = 1;
// Far below stream_idle (5 minutes): a request left waiting shows as a missing answer.
constexpr Ms kPrompt{8000};

// The owners here are plain stand-ins (a black hole, a bare socket, a stopped instance).
using UnresponsiveOwnerTest = OverTransports<ForwardingTest>;
FORWARDING_OVER_PLAIN_LISTENERS(UnresponsiveOwnerTest);

// A ferry for inst-1's instance whose table sends inst-2 to `owner_url`, with `extra_yaml`.
Ferry* startEntry(ForwardingCell& cell, const std::string& owner_url,
                  const std::string& extra_yaml) {
  PeerList peers = cell.peers();
  peers[kOwner].second = owner_url;
  const std::string fleet = cell.workDir() + "/urls-entry.json";
  EXPECT_TRUE(writeFileAtomically(fleet, renderUrlsJson(peers)).isOk());
  FerrySpec spec;
  spec.instance_name = cell.name(kEntry);
  spec.local_port = cell.emulator(kEntry).port();
  spec.fleet_file = fleet;
  spec.extra_yaml = extra_yaml;
  auto f = cell.startExtraFerry(spec);
  EXPECT_TRUE(f.isOk()) << f.status().message();
  return f.isOk() ? *f : nullptr;
}

std::string errorCode(const HttpResponse& r) {
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  if (!d.IsObject() || !d.HasMember("error") || !d["error"].IsObject() ||
      !d["error"].HasMember("code") || !d["error"]["code"].IsString()) {
    return "";
  }
  return d["error"]["code"].GetString();
}

TEST_P(UnresponsiveOwnerTest, BlackholedOwnerGivesEveryQueuedAppendTheLocal409) {
  testing::BlackholeListener blackhole;
  Ferry* entry = startEntry(*cell_, url(blackhole.port()),
                            "upstream: {max_connections: 1}\n"
                            "timeouts: {upstream_connect: 1s, stream_idle: 300s}\n");
  ASSERT_NE(entry, nullptr);
  const std::string s = cell_->streamOwnedBy(kOwner, "bh");
  CellClient clients[3];
  for (auto& c : clients) {
    ASSERT_TRUE(connectTo(c, *entry).isOk());
    ASSERT_TRUE(
        c.sendRequest("POST", "/v1/stream/" + s, {{"content-type", "text/plain"}}, "x").isOk());
  }
  // All three forwards wait for the one connection the cap allows before its connect gives up.
  ASSERT_EQ(entry->waitForStat(perOwner("ferry_forward_attempts_total", "inst-2"), 3, Ms(900)), 3);
  for (auto& c : clients) {
    auto r = c.readResponse(kPrompt);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->status, 409) << r->body;
    EXPECT_EQ(errorCode(*r), "not_ring_owner") << r->body;
    EXPECT_EQ(r->headerOr("streams-replay-to"), "inst-2");
    EXPECT_EQ(r->header("streams-forwarded-to"), nullptr);
  }
  EXPECT_EQ(entry->stat(perOwner("ferry_forward_refused_total", "inst-2")), 3);
  EXPECT_EQ(entry->stat(skipped("refused")), 3);
  EXPECT_EQ(entry->stat("ferry_upstream_pending_failures_total"), 3);
  EXPECT_EQ(entry->stat("ferry_forward_cancelled_total{phase=\"before_response\"}"), 0)
      << "refusals are not client cancellations";
  EXPECT_EQ(entry->stat("ferry_stream_idle_timeouts_total"), 0);
}

// The one connection the cap allows to the owner is busy when the owner goes away: the two
// queued forwards get a connect when it closes, which is refused; both get the local 409
// (the owner saw nothing), not only the oldest.
TEST_P(UnresponsiveOwnerTest, RefusingOwnerGivesEveryQueuedAppendTheLocal409) {
  uint16_t owner_port = 0;
  int listen_fd = testing::listenOnLoopback(owner_port);
  ASSERT_GE(listen_fd, 0);
  Ferry* entry = startEntry(*cell_, url(owner_port),
                            "upstream: {max_connections: 1}\ntimeouts: {stream_idle: 300s}\n");
  ASSERT_NE(entry, nullptr);
  const std::string s = cell_->streamOwnedBy(kOwner, "rf");
  CellClient clients[3];
  for (auto& c : clients) ASSERT_TRUE(connectTo(c, *entry).isOk());
  ASSERT_TRUE(clients[0]
                  .sendRequest("POST", "/v1/stream/" + s, {{"content-type", "text/plain"}}, "held")
                  .isOk());
  pollfd p{listen_fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, static_cast<int>(kPrompt.count())), 1);
  int held = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);  // never answered
  ASSERT_GE(held, 0);
  for (int i = 1; i < 3; ++i) {
    ASSERT_TRUE(
        clients[i]
            .sendRequest("POST", "/v1/stream/" + s, {{"content-type", "text/plain"}}, "queued")
            .isOk());
  }
  ASSERT_EQ(entry->waitForStat(perOwner("ferry_forward_attempts_total", "inst-2"), 3), 3);
  ::close(listen_fd);  // later connects are refused
  ::close(held);       // the busy forward loses its connection after sending
  auto first = clients[0].readResponse(kPrompt);
  ASSERT_TRUE(first.isOk()) << first.status().message();
  EXPECT_EQ(first->status, 503) << first->body;
  EXPECT_EQ(errorCode(*first), "forward_failed");
  for (int i = 1; i < 3; ++i) {
    auto r = clients[i].readResponse(kPrompt);
    ASSERT_TRUE(r.isOk()) << "queued forward " << i << ": " << r.status().message();
    EXPECT_EQ(r->status, 409) << r->body;
    EXPECT_EQ(errorCode(*r), "not_ring_owner") << r->body;
  }
  EXPECT_EQ(entry->stat(perOwner("ferry_forward_refused_total", "inst-2")), 2);
  EXPECT_EQ(entry->stat(perOwner("ferry_forward_failed_total", "inst-2")), 1);
  EXPECT_EQ(entry->stat("ferry_upstream_pending_failures_total"), 2);
  EXPECT_EQ(entry->stat("ferry_forward_cancelled_total{phase=\"before_response\"}"), 0);
}

// Resumes a stopped process however the test ends.
class Resume {
 public:
  explicit Resume(testing::Process& p) : p_(p) {}
  ~Resume() { p_.signal(SIGCONT); }

 private:
  testing::Process& p_;
};

TEST_P(UnresponsiveOwnerTest, StoppedOwnerGives503ForwardFailedAfterResponseHead) {
  // The entry ferry's table names the owner's instance itself, which is then stopped: the
  // kernel still accepts the connection and the request, nothing answers.
  Ferry* entry = startEntry(*cell_, url(cell_->emulator(kOwner).port()),
                            "timeouts: {response_head: 500ms, stream_idle: 300s}\n");
  ASSERT_NE(entry, nullptr);
  const std::string s = cell_->streamOwnedBy(kOwner, "stop");
  cell_->emulator(kOwner).process().signal(SIGSTOP);
  Resume resume(cell_->emulator(kOwner).process());

  const auto started = std::chrono::steady_clock::now();
  auto r = viaFerry(*entry, "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}},
                    "held by a stopped owner", kPrompt);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - started, kPrompt);
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_EQ(errorCode(*r), "forward_failed") << r->body;
  EXPECT_EQ(r->headerOr("retry-after"), "1");
  EXPECT_EQ(entry->stat("ferry_upstream_response_head_timeouts_total"), 1);
  EXPECT_EQ(entry->stat(perOwner("ferry_forward_failed_total", "inst-2")), 1);
  EXPECT_EQ(entry->stat("ferry_forward_cancelled_total{phase=\"before_response\"}"), 0);
  EXPECT_EQ(entry->stat("ferry_stream_idle_timeouts_total"), 0);
}

}  // namespace
}  // namespace ferry::fwdtest
