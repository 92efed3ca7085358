// Owner routing (project issue 15, docs/forwarding.md "Owner routing"): a ferry learns stream ->
// owner from an owner's answer to a forward and sends that stream's next requests straight to
// it; every rule of the issue, on a cell of three emulators behind ferries with routing on.
// The rules run over every transport of the forwarding suite (forwarding_test.h): HTTP/1.1 and
// HTTP/2 clients, plain and TLS (mTLS between ferries) cells, forwards over HTTP/1.1 and over
// HTTP/2 (h2c with prior knowledge, or https where ALPN picks h2). A stand-in owner that fails
// after the request is chosen per transport (failingOwnerUrl()). The access-log and bounds
// tests do not depend on the transport and run on the plain cell only.
#include <rapidjson/document.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <sstream>

#include "integration/streams_emulator/ownership.h"
#include "tests/integration/forwarding/forwarding_test.h"
#include "tests/integration/forwarding/support/h2_owner.h"
#include "tests/support/stats/stats_lookup.h"
#include "tests/support/tls/scripted_tls_owner.h"

namespace ferry::fwdtest {
namespace {

constexpr size_t kEntry = 0;  // inst-1: the ferry the tests talk to
constexpr size_t kOwner = 1;  // inst-2: the owner it learns
constexpr size_t kOther = 2;  // inst-3

std::string routed(const std::string& outcome) {
  return "ferry_owner_routing_requests_total{outcome=\"" + outcome + "\"}";
}
std::string evicted(const std::string& reason) {
  return "ferry_owner_routing_evictions_total{reason=\"" + reason + "\"}";
}
constexpr char kEntries[] = "ferry_owner_routing_entries";

// 409s the emulator answered (all routes): the local instance's read-and-409 that routing skips.
// A listing that cannot be read fails the test (and reads as kNoSuchSeries).
int64_t conflicts(Emulator& e) {
  rapidjson::Document d;
  const std::string json = e.requests();
  d.Parse(json.c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("routes") || !d["routes"].IsObject()) {
    ADD_FAILURE() << e.name() << ": no \"routes\" in GET /v1/debug/requests: " << json;
    return ::ferry::testing::kNoSuchSeries;
  }
  int64_t n = 0;
  for (const auto& route : d["routes"].GetObject()) {
    if (!route.value.HasMember("409")) continue;
    if (!route.value["409"].IsInt64()) {
      ADD_FAILURE() << e.name() << ": route " << route.name.GetString() << " has a 409 count "
                    << "that is not an integer: " << json;
      return ::ferry::testing::kNoSuchSeries;
    }
    n += route.value["409"].GetInt64();
  }
  return n;
}

class OwnerRoutingTest : public ForwardingTest {
 protected:
  CellOptions cellOptions() const override {
    CellOptions o;
    o.owner_routing_yaml = routingYaml();
    o.replay_buffer_bytes = replayLimit();
    return o;
  }
  virtual std::string routingYaml() const { return "{enabled: true}"; }
  virtual uint32_t replayLimit() const { return 65536; }

  StatusOr<HttpResponse> append(size_t via, const std::string& s, const std::string& body = "x",
                                const Headers& extra = {}) {
    Headers h{{"content-type", "text/plain"}};
    h.insert(h.end(), extra.begin(), extra.end());
    return viaFerry(cell_->ferry(via), "POST", "/v1/stream/" + s, h, body);
  }
  // A forward through ferry `via` that the owner answers: ferry learns `s` -> its owner.
  void learn(const std::string& s) {
    const int64_t before = cell_->ferry(kEntry).stat("ferry_owner_routing_learned_total");
    auto r = append(kEntry, s);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    ASSERT_EQ(r->status, 204) << r->body;
    ASSERT_EQ(cell_->ferry(kEntry).stat("ferry_owner_routing_learned_total"), before + 1);
  }
  // Points ferry `i`'s table at `peers` and waits until it is loaded.
  void publish(size_t i, const PeerList& peers) {
    Ferry& f = cell_->ferry(i);
    const uint64_t version = f.peersVersion();
    ASSERT_TRUE(cell_->writeFleetFile(i, renderUrlsJson(peers)).isOk());
    ASSERT_GT(f.waitForPeersVersionAbove(version), version);
  }
  // Every emulator gets `members` at once (a hand-over with no moving window).
  void setMembers(const std::vector<std::string>& members) {
    std::string json = "{\"members\":[";
    for (size_t i = 0; i < members.size(); ++i) json += (i ? ",\"" : "\"") + members[i] + "\"";
    json += "]}";
    for (size_t i = 0; i < cell_->size(); ++i) ASSERT_TRUE(cell_->emulator(i).control(json));
  }
  // A stream owned by `first` with every member and by `then` with `members`.
  std::string streamMoving(size_t first, const std::vector<std::string>& members,
                           const std::string& then, const std::string& prefix) {
    for (int n = 0; n < 100000; ++n) {
      std::string s = prefix + "-" + std::to_string(n);
      const int now = streams::ownerIndex(s, 16, members);
      if (cell_->ownerIndexOf(s) == first && now >= 0 && members[now] == then) return s;
    }
    ADD_FAILURE() << "no stream moves from member " << first << " to " << then;
    return prefix;
  }
  // The peer URL of a stand-in for inst-2 that reads a forwarded request whole and fails before
  // any response byte, speaking what the cell's ferries forward with: over HTTP/2 the scripted
  // h2 owner (h2c, or TLS with ALPN h2 and inst-2's certificate), which resets streams named
  // "resetbody-..." once their request ended; over HTTP/1.1 in a TLS cell an OpenSSL server
  // with inst-2's certificate that resets the connection after the request; in a plain cell a
  // socket that reads the request and closes. It lives as long as the test.
  std::string failingOwnerUrl() {
    const testing::CellTlsFiles* files = cell_->tlsFiles();
    if (ownerHttp2(transport())) {
      H2OwnerOptions options;
      if (files != nullptr) {
        options.cert_file = files->serverCert("inst-2");
        options.key_file = files->serverKey("inst-2");
      }
      auto owner = ScriptedH2Owner::start(cell_->workDir(), options);
      EXPECT_TRUE(owner.isOk()) << owner.status().message();
      if (!owner.isOk()) return url(closedPort());
      h2_owner_ = std::move(*owner);
      return cell_->peerUrl(h2_owner_->port());
    }
    if (files != nullptr) {
      tls_owner_ = std::make_unique<testing::ScriptedTlsOwner>(
          files->serverCert("inst-2"), files->serverKey("inst-2"),
          testing::TlsOwnerScript{.action = testing::TlsOwnerScript::Action::ResetAfterRequest});
      return cell_->peerUrl(tls_owner_->port());
    }
    plain_owner_ = std::make_unique<CannedUpstream>("");
    return url(plain_owner_->port());
  }
  // Whole requests the stand-in of failingOwnerUrl() read.
  int failingOwnerRequests() {
    if (h2_owner_) return h2_owner_->count(R"(^end conn=\d+ stream=\d+ )");
    if (tls_owner_) return tls_owner_->requests();
    return plain_owner_ ? plain_owner_->requests() : -1;
  }

  std::unique_ptr<ScriptedH2Owner> h2_owner_;
  std::unique_ptr<testing::ScriptedTlsOwner> tls_owner_;
  std::unique_ptr<CannedUpstream> plain_owner_;
};

// Every rule over every transport of the forward suite (forwarding_test.h).
using OwnerRoutingTransportTest = OverTransports<OwnerRoutingTest>;
FORWARDING_OVER_TRANSPORTS(OwnerRoutingTransportTest);

// Learn + use: the owner's answer to a forward teaches the entry; the next request goes straight
// to the owner, marked, and the local instance never sees it.
TEST_P(OwnerRoutingTransportTest, LearnsFromAForwardAndRoutesTheNextRequestStraightToTheOwner) {
  const std::string s = cell_->streamOwnedBy(kOwner, "learn");
  createAt(kOwner, s);
  Emulator& local = cell_->emulator(kEntry);
  learn(s);
  EXPECT_EQ(conflicts(local), 1);  // the first request took the forwarding path
  EXPECT_EQ(cell_->ferry(kEntry).stat(kEntries), 1);

  auto r = append(kEntry, s, "routed");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  EXPECT_EQ(conflicts(local), 1);  // the local instance never saw the routed request
  EXPECT_EQ(cell_->ferry(kEntry).stat(routed("right")), 1);
  const auto applied = appliedAt(kOwner, s);
  ASSERT_EQ(applied.size(), 2u);
  EXPECT_EQ(applied[1].forwarded_by, "inst-1");  // marked, as any forward
  EXPECT_EQ(applied[1].body_sha256, sha256Hex("routed"));

  // The product route names the same stream: routed too (the owner answers whatever it
  // answers; it is not a 409).
  auto p = viaFerry(cell_->ferry(kEntry), "GET", "/v1/streams/" + s + "/records?cursor=-1");
  ASSERT_TRUE(p.isOk()) << p.status().message();
  EXPECT_NE(p->status, 409) << p->body;
  EXPECT_EQ(p->headerOr("streams-forwarded-to"), "inst-2");
  EXPECT_EQ(cell_->ferry(kEntry).stat(routed("right")), 2);
  EXPECT_EQ(conflicts(local), 1);
}

// Learn only from evidence: an owner that answers the forward with a 409 teaches nothing.
// inst-2's instance alone no longer counts itself the owner (its members are inst-1 and
// inst-3), while inst-1's still names inst-2: every forward gets inst-2's own 409.
TEST_P(OwnerRoutingTransportTest, AnOwnersConflictTeachesNothing) {
  const std::vector<std::string> moved{"inst-1", "inst-3"};
  const std::string s = streamMoving(kOwner, moved, "inst-3", "noevidence");
  ASSERT_TRUE(cell_->emulator(kOwner).control(R"({"members":["inst-1","inst-3"]})"));
  for (int i = 0; i < 2; ++i) {
    auto r = append(kEntry, s);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->status, 409) << r->body;
    EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");  // the owner's 409
  }
  EXPECT_EQ(conflicts(cell_->emulator(kOwner)), 2);  // both forwarded, both refused there
  EXPECT_EQ(conflicts(cell_->emulator(kEntry)), 2);  // both went local first: nothing learnt
  EXPECT_EQ(cell_->ferry(kEntry).stat("ferry_owner_routing_learned_total"), 0);
  EXPECT_EQ(cell_->ferry(kEntry).stat(kEntries), 0);
  EXPECT_EQ(cell_->ferry(kEntry).stat(routed("right")), 0);
}

// A marked request is never routed (nor forwarded): it goes to the local instance.
TEST_P(OwnerRoutingTransportTest, AMarkedRequestIsNeverRouted) {
  const std::string s = cell_->streamOwnedBy(kOwner, "marked");
  createAt(kOwner, s);
  learn(s);
  auto r = append(kEntry, s, "x", {{"streams-forwarded", "inst-3"}});
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(conflicts(cell_->emulator(kEntry)), 2);
  EXPECT_EQ(cell_->ferry(kEntry).stat(routed("right")), 0);
}

// A wrong entry (ownership moved to inst-3): the learned owner's 409 drops it, the request is
// sent once more to the owner it named, whose answer the client gets; that teaches the new
// owner. The local instance sees none of it.
TEST_P(OwnerRoutingTransportTest, AWrongOwnersConflictIsCorrectedToTheOwnerItNames) {
  const std::vector<std::string> moved{"inst-1", "inst-3"};
  const std::string s = streamMoving(kOwner, moved, "inst-3", "tothird");
  createAt(kOwner, s);
  learn(s);
  setMembers(moved);
  createAt(kOther, s);
  const int64_t local_conflicts = conflicts(cell_->emulator(kEntry));

  auto r = append(kEntry, s, "corrected");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-3");
  EXPECT_EQ(cell_->ferry(kEntry).stat(routed("wrong_then_corrected")), 1);
  EXPECT_EQ(conflicts(cell_->emulator(kEntry)), local_conflicts);
  ASSERT_EQ(appliedAt(kOther, s).size(), 1u);
  EXPECT_EQ(appliedAt(kOwner, s).size(), 1u);  // only the first append

  auto again = append(kEntry, s, "right");
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ(again->status, 204);
  EXPECT_EQ(again->headerOr("streams-forwarded-to"), "inst-3");
  EXPECT_EQ(cell_->ferry(kEntry).stat(routed("right")), 1);
  EXPECT_EQ(appliedAt(kOther, s).size(), 2u);
}

// The wrong owner names this instance: the second send goes to the local instance.
TEST_P(OwnerRoutingTransportTest, AWrongOwnerNamingThisInstanceSendsItLocal) {
  const std::vector<std::string> moved{"inst-1"};
  const std::string s = streamMoving(kOwner, moved, "inst-1", "tolocal");
  createAt(kOwner, s);
  learn(s);
  setMembers(moved);
  createAt(kEntry, s);
  auto r = append(kEntry, s, "local now");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "");
  EXPECT_EQ(cell_->ferry(kEntry).stat(routed("wrong_then_corrected")), 1);
  const auto applied = appliedAt(kEntry, s);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].forwarded_by, "");  // the local path: not marked
}

// The wrong owner names one this ferry does not know: the second send is local, and its answer
// (a 409 naming inst-3) goes to the client: at most two sends per request.
TEST_P(OwnerRoutingTransportTest, AtMostTwoSendsWhenTheNamedOwnerIsUnknown) {
  const std::vector<std::string> moved{"inst-1", "inst-3"};
  const std::string s = streamMoving(kOwner, moved, "inst-3", "twosends");
  createAt(kOwner, s);
  learn(s);
  setMembers(moved);
  PeerList peers = cell_->peers();
  peers.pop_back();  // inst-3 unknown to inst-1
  publish(kEntry, peers);
  const int64_t before = conflicts(cell_->emulator(kEntry));
  auto r = append(kEntry, s);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(r->headerOr("streams-replay-to"), "inst-3");
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "");  // the local instance's 409
  EXPECT_EQ(conflicts(cell_->emulator(kEntry)), before + 1);
  EXPECT_EQ(cell_->ferry(kEntry).stat(routed("wrong_then_corrected")), 1);
  EXPECT_TRUE(appliedAt(kOther, s).empty());
}

// An unreachable owner that saw nothing: the entry is dropped and the request takes the local
// path (the local 409, forwarded to the owner, which is still unreachable: the 409 unchanged).
TEST_P(OwnerRoutingTransportTest, AnUnreachableOwnerDropsTheEntryAndTakesTheLocalPath) {
  const std::string s = cell_->streamOwnedBy(kOwner, "unreach");
  createAt(kOwner, s);
  learn(s);
  PeerList peers = cell_->peers();
  peers[kOwner].second = cell_->peerUrl(closedPort());
  publish(kEntry, peers);
  auto r = append(kEntry, s);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(r->headerOr("streams-replay-to"), "inst-2");
  EXPECT_EQ(conflicts(cell_->emulator(kEntry)), 2);  // the local path was taken
  EXPECT_EQ(cell_->ferry(kEntry).stat(routed("unreachable")), 1);
  EXPECT_EQ(cell_->ferry(kEntry).stat(kEntries), 0);
  EXPECT_EQ(cell_->ferry(kEntry).stat(perOwner("ferry_forward_refused_total", "inst-2")), 1);
}

// The owner failed after a request byte, before its head: 503 forward_failed (it may have
// applied it), the entry dropped; the local instance never saw it.
TEST_P(OwnerRoutingTransportTest, AnOwnerFailingAfterSendGives503ForwardFailed) {
  const std::string s = cell_->streamOwnedBy(kOwner, "resetbody");  // the h2 owner's script
  createAt(kOwner, s);
  learn(s);
  PeerList peers = cell_->peers();
  peers[kOwner].second = failingOwnerUrl();
  publish(kEntry, peers);
  auto r = append(kEntry, s, "maybe applied");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  expectForwardFailed503(*r);
  EXPECT_EQ(failingOwnerRequests(), 1);  // routed straight there, and read whole
  EXPECT_EQ(conflicts(cell_->emulator(kEntry)), 1);
  EXPECT_EQ(cell_->ferry(kEntry).stat(routed("failed")), 1);
  EXPECT_EQ(cell_->ferry(kEntry).stat(kEntries), 0);
}

// A dead local instance no longer takes down the streams it does not own.
TEST_P(OwnerRoutingTransportTest, ADeadLocalInstanceStillReachesTheOwnersOfLearnedStreams) {
  const std::string s = cell_->streamOwnedBy(kOwner, "deadlocal");
  createAt(kOwner, s);
  learn(s);
  cell_->emulator(kEntry).process().stop();
  auto r = append(kEntry, s, "still here");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  // Without an entry, today's answer: the local instance is needed first.
  auto other = append(kEntry, cell_->streamOwnedBy(kOther, "nolearn"));
  ASSERT_TRUE(other.isOk()) << other.status().message();
  EXPECT_EQ(other->status, 503);
}

// An entry whose owner left the peer table is dead: the local path, and the local 409 is
// skipped as an unknown owner, as without routing.
TEST_P(OwnerRoutingTransportTest, AnEntryWhoseOwnerLeftThePeerTableIsDead) {
  const std::string s = cell_->streamOwnedBy(kOwner, "gone");
  createAt(kOwner, s);
  learn(s);
  PeerList peers = cell_->peers();
  peers.erase(peers.begin() + kOwner);
  publish(kEntry, peers);
  auto r = append(kEntry, s);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(cell_->ferry(kEntry).stat(evicted("owner_gone")), 1);
  EXPECT_EQ(cell_->ferry(kEntry).stat(skipped("unknown_owner")), 1);
  EXPECT_EQ(cell_->ferry(kEntry).stat(kEntries), 0);
}

// The access log says a request was routed, and how it ended.
class OwnerRoutingLogTest : public OwnerRoutingTest {
 protected:
  CellOptions cellOptions() const override {
    CellOptions o = OwnerRoutingTest::cellOptions();
    log_ = ::testing::TempDir() + "/owner-routing-" + std::to_string(::getpid()) + ".log";
    std::remove(log_.c_str());
    o.ferry_extra_yaml = "access_log: {path: " + log_ + "}\n";
    return o;
  }
  void TearDown() override {
    OwnerRoutingTest::TearDown();
    std::remove(log_.c_str());
  }
  mutable std::string log_;
};
TEST_F(OwnerRoutingLogTest, TheAccessLogSaysTheRequestWasRouted) {
  const std::string s = cell_->streamOwnedBy(kOwner, "logged");
  createAt(kOwner, s);
  learn(s);
  auto r = append(kEntry, s, "x", {{"x-request-id", "routed-request-1"}});
  ASSERT_TRUE(r.isOk()) << r.status().message();
  ASSERT_EQ(r->status, 204);
  cell_->stop();  // every record written
  std::ifstream in(log_);
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    if (line.find("routed-request-1") == std::string::npos) continue;
    if (line.find("\"upstream\":\"inst-2\"") == std::string::npos) continue;  // inst-1's record
    found = true;
    EXPECT_NE(line.find("\"route\":\"right\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"forward\":\"forwarded\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"owner\":\"inst-2\""), std::string::npos) << line;
  }
  EXPECT_TRUE(found);
}

// A body that outgrew the replay limit while going to a wrong owner: the client gets that
// owner's 409 (as it would get the local 409 without routing); nothing is sent again.
class OwnerRoutingSmallReplayFixture : public OwnerRoutingTest {
 protected:
  uint32_t replayLimit() const override { return 1024; }
};
using OwnerRoutingSmallReplayTest = OverTransports<OwnerRoutingSmallReplayFixture>;
FORWARDING_OVER_TRANSPORTS(OwnerRoutingSmallReplayTest);
TEST_P(OwnerRoutingSmallReplayTest, ABodyOverTheLimitGetsTheWrongOwnersConflict) {
  const std::vector<std::string> moved{"inst-1", "inst-3"};
  const std::string s = streamMoving(kOwner, moved, "inst-3", "overlimit");
  createAt(kOwner, s);
  learn(s);
  setMembers(moved);
  auto r = append(kEntry, s, patternBody(4096));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(r->headerOr("streams-replay-to"), "inst-3");
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  EXPECT_EQ(cell_->ferry(kEntry).stat(routed("wrong_over_limit")), 1);
  EXPECT_EQ(conflicts(cell_->emulator(kEntry)), 1);
  EXPECT_TRUE(appliedAt(kOther, s).empty());
}

// Bounds: max_entries (least recently used evicted) and ttl.
class OwnerRoutingBoundsTest : public OwnerRoutingTest {
 protected:
  std::string routingYaml() const override { return "{enabled: true, max_entries: 2, ttl: 1s}"; }
};
TEST_F(OwnerRoutingBoundsTest, TheTableKeepsAtMostMaxEntriesAndEntriesExpire) {
  std::vector<std::string> streams;
  for (int i = 0; i < 3; ++i) {
    streams.push_back(cell_->streamOwnedBy(kOwner, "bound" + std::to_string(i)));
    createAt(kOwner, streams.back());
    learn(streams.back());
  }
  Ferry& f = cell_->ferry(kEntry);
  EXPECT_EQ(f.stat(kEntries), 2);
  EXPECT_EQ(f.stat(evicted("capacity")), 1);
  // The first was evicted (least recently used): local path again.
  const int64_t before = conflicts(cell_->emulator(kEntry));
  ASSERT_TRUE(append(kEntry, streams[0]).isOk());
  EXPECT_EQ(conflicts(cell_->emulator(kEntry)), before + 1);
  // The passing of time is the subject here: past the ttl, every entry is dead.
  ::usleep(1'200'000);
  ASSERT_TRUE(append(kEntry, streams[2]).isOk());
  EXPECT_EQ(conflicts(cell_->emulator(kEntry)), before + 2);
  EXPECT_GE(f.stat(evicted("expired")), 1);
  EXPECT_EQ(f.stat(routed("right")), 0);
}

}  // namespace
}  // namespace ferry::fwdtest
