// The peer table: reloaded from the fleet file (watched, and on SIGHUP) without losing a
// request; a bad publication keeps the last good table.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "tests/integration/forwarding/forwarding_test.h"

namespace ferry::fwdtest {
namespace {

constexpr size_t kEntry = 0;
constexpr size_t kOwner = 1;

class PeerTableFixture : public ForwardingTest {
 protected:
  // Appends through the entry ferry and expects the owner's answer.
  void expectForwardingWorks(const std::string& stream, const std::string& body) {
    auto r = viaFerry(cell_->ferry(kEntry), "POST", "/v1/stream/" + stream,
                      {{"content-type", "text/plain"}}, body);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->status, 204) << r->body;
    EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  }
};
// The tables here name http peers (a TLS cell refuses them): plain listeners, both protocols.
using PeerTableTest = OverTransports<PeerTableFixture>;
FORWARDING_OVER_PLAIN_LISTENERS(PeerTableTest);
// No client request in it: one run.
using PeerTableSighupTest = ForwardingTest;

TEST_P(PeerTableTest, ReloadUnderLoadLosesNoRequest) {
  const std::string s = cell_->streamOwnedBy(kOwner, "load");
  createAt(kOwner, s);
  Ferry& ferry = cell_->ferry(kEntry);

  std::atomic<bool> stop{false};
  std::atomic<int> sent{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::thread loop([&] {
    CellClient c;  // keep-alive (over HTTP/2 one stream after another); reconnects if closed
    while (!stop.load()) {
      if (!c.connected() && !connectTo(c, ferry).isOk()) {
        std::lock_guard<std::mutex> g(mu);
        failures.push_back("connect failed");
        return;
      }
      const std::string body = "n" + std::to_string(sent.load());
      Status st = c.sendRequest("POST", "/v1/stream/" + s, {{"content-type", "text/plain"}}, body);
      auto r = st.isOk() ? c.readResponse(Ms(10000)) : StatusOr<testing::HttpResponse>(st);
      std::lock_guard<std::mutex> g(mu);
      if (!r.isOk()) {
        failures.push_back("request " + std::to_string(sent.load()) + ": " + r.status().message());
        return;
      }
      if (r->status != 204 || r->headerOr("streams-forwarded-to") != "inst-2") {
        failures.push_back("request " + std::to_string(sent.load()) + ": " +
                           std::to_string(r->status) + " " + r->body);
      }
      ++sent;
      if (r->headerOr("connection") == "close") c.close();
    }
  });

  // Stops the loop on every way out of the test, an ASSERT included.
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } joiner{stop, loop};

  const uint64_t first = ferry.peersVersion();
  uint64_t version = first;
  constexpr int kRewrites = 6;
  for (int k = 0; k < kRewrites; ++k) {
    // Same members, another order, plus an extra peer that changes with every publication.
    PeerList peers = cell_->peers();
    if (k % 2 == 1) std::reverse(peers.begin(), peers.end());
    peers.emplace_back("extra-" + std::to_string(k), url(closedPort()));
    const int before = sent.load();
    ASSERT_TRUE(cell_->writeFleetFile(kEntry, renderUrlsJson(peers)).isOk());
    const uint64_t now = ferry.waitForPeersVersionAbove(version);
    ASSERT_GT(now, version) << "reload " << k;
    version = now;
    // Requests kept flowing across this reload.
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (sent.load() < before + 3 && std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> g(mu);
        if (!failures.empty()) break;
      }
      std::this_thread::sleep_for(Ms(5));  // polling a counter of another thread
    }
  }
  stop = true;
  loop.join();

  std::lock_guard<std::mutex> g(mu);
  EXPECT_TRUE(failures.empty()) << failures.front();
  EXPECT_GE(version, first + kRewrites);
  EXPECT_GE(sent.load(), 3 * kRewrites);
  // Every acknowledged append is in the stream once, in order. Read from the stream itself:
  // the loop sends as fast as ferry answers for as long as the reloads take, and the owner's
  // applied log keeps only its last 100,000 entries (--applied-log-limit), which a loaded
  // machine passed (436,340 requests while 6 reloads took 62 s).
  auto stored = httpRequest(cell_->emulator(kOwner).port(), "GET", "/v1/stream/" + s + "?offset=-1",
                            {}, {}, Ms(30000));
  ASSERT_TRUE(stored.isOk() && stored->status == 200) << stored.status().message();
  std::string expected;
  for (int i = 0; i < sent.load(); ++i) expected += "n" + std::to_string(i);
  EXPECT_TRUE(stored->body == expected)
      << "the stream holds " << stored->body.size() << " bytes, " << expected.size()
      << " expected for " << sent.load() << " appends";
  auto applied = appliedAt(kOwner, s);
  EXPECT_EQ(applied.size(), std::min<size_t>(sent.load(), 100000));
  for (const auto& a : applied) EXPECT_EQ(a.forwarded_by, "inst-1");
  EXPECT_EQ(ferry.stat("ferry_peer_table_reload_failures_total"), 0);
}

TEST_P(PeerTableTest, BadPeerFileKeepsTheLastGoodTable) {
  const std::string s = cell_->streamOwnedBy(kOwner, "bad");
  createAt(kOwner, s);
  Ferry& ferry = cell_->ferry(kEntry);
  const uint64_t version = ferry.peersVersion();
  const int64_t failures = ferry.stat("ferry_peer_table_reload_failures_total");
  auto good = ferry.admin("/peers");
  ASSERT_TRUE(good.isOk());
  const std::string owner_url = url(cell_->ferry(kOwner).port());
  ASSERT_NE(good->body.find(owner_url), std::string::npos) << good->body;

  // 1. Not JSON.
  ASSERT_TRUE(cell_->writeFleetFile(kEntry, "{\"inst-1\": \"http://127.0.0.1:1\",").isOk());
  EXPECT_GE(ferry.waitForStat("ferry_peer_table_reload_failures_total", failures + 1),
            failures + 1);
  EXPECT_EQ(ferry.peersVersion(), version);
  EXPECT_FALSE(ferry.peersLastError().empty());
  expectForwardingWorks(s, "after bad json");

  // 2. Valid JSON, but a URL with a path: not an origin.
  PeerList peers = cell_->peers();
  peers[kOwner].second = owner_url + "/v1";
  ASSERT_TRUE(cell_->writeFleetFile(kEntry, renderUrlsJson(peers)).isOk());
  EXPECT_GE(ferry.waitForStat("ferry_peer_table_reload_failures_total", failures + 2),
            failures + 2);
  EXPECT_EQ(ferry.peersVersion(), version);
  const std::string error = ferry.peersLastError();
  EXPECT_FALSE(error.empty());
  EXPECT_NE(error.find("inst-2"), std::string::npos) << error;
  auto kept = ferry.admin("/peers");
  ASSERT_TRUE(kept.isOk());
  EXPECT_NE(kept->body.find("\"" + owner_url + "\""), std::string::npos) << kept->body;
  expectForwardingWorks(s, "after url with path");

  auto applied = appliedAt(kOwner, s);
  ASSERT_EQ(applied.size(), 2u);
  for (const auto& a : applied) EXPECT_EQ(a.forwarded_by, "inst-1");
}

TEST_F(PeerTableSighupTest, SighupReloads) {
  // A ferry whose watcher would not look again for a day: only SIGHUP can reload it.
  const std::string file = cell_->workDir() + "/urls-sighup.json";
  ASSERT_TRUE(writeFileAtomically(file, renderUrlsJson(cell_->peers())).isOk());
  FerrySpec spec;
  spec.instance_name = "inst-1";
  spec.local_port = cell_->emulator(kEntry).port();
  spec.fleet_file = file;
  spec.watch_interval = "24h";
  auto f = cell_->startExtraFerry(spec);
  ASSERT_TRUE(f.isOk()) << f.status().message();
  Ferry& ferry = **f;
  const uint64_t version = ferry.peersVersion();
  ASSERT_GT(version, 0u);

  PeerList peers = cell_->peers();
  peers.emplace_back("inst-9", "http://127.0.0.1:9");
  ASSERT_TRUE(writeFileAtomically(file, renderUrlsJson(peers)).isOk());
  ferry.process().signal(SIGHUP);
  EXPECT_GT(ferry.waitForPeersVersionAbove(version), version);
  auto now = ferry.admin("/peers");
  ASSERT_TRUE(now.isOk());
  EXPECT_NE(now->body.find("inst-9"), std::string::npos) << now->body;
}

}  // namespace
}  // namespace ferry::fwdtest
