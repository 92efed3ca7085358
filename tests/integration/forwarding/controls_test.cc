// The trigger's controls: when any condition fails the local 409 reaches the client unchanged
// (status, headers, body) and ferry_forward_skipped_total{reason} says which one failed.
// Each test compares the 409 the instance sends directly with the one ferry passes through.
#include "tests/integration/forwarding/forwarding_test.h"

namespace ferry::fwdtest {
namespace {

constexpr size_t kEntry = 0;
constexpr size_t kOwner = 1;

class ControlsFixture : public ForwardingTest {
 protected:
  // Sends `request` to the entry emulator directly and through `ferry`; expects the same 409,
  // `reason` counted once, and nothing attempted or applied at the owner.
  void expect409PassedThrough(Ferry& ferry, const std::string& request, const std::string& reason,
                              const std::string& stream) {
    const int64_t before = ferry.stat(skipped(reason));
    auto direct = rawExchange(cell_->emulator(kEntry).port(), request);
    ASSERT_TRUE(direct.isOk()) << direct.status().message();
    ASSERT_NE(direct->status_line.find(" 409 "), std::string::npos) << direct->raw;
    auto via = rawVia(ferry, request);
    ASSERT_TRUE(via.isOk()) << via.status().message();
    expectSameResponse(*direct, *via);
    EXPECT_EQ(ferry.stat(skipped(reason)), before + 1) << reason;
    EXPECT_EQ(ferry.stat(perOwner("ferry_forward_attempts_total", "inst-2")), 0);
    EXPECT_TRUE(appliedAt(kOwner, stream).empty());
  }

  // A second ferry in front of inst-1's emulator, with its own name and fleet file.
  Ferry* extraFerry(const std::string& instance_name, const PeerList& peers) {
    const std::string file = cell_->workDir() + "/urls-extra-" + instance_name + ".json";
    EXPECT_TRUE(writeFileAtomically(file, renderUrlsJson(peers)).isOk());
    FerrySpec spec;
    spec.instance_name = instance_name;
    spec.local_port = cell_->emulator(kEntry).port();
    spec.fleet_file = file;
    auto f = cell_->startExtraFerry(spec);
    EXPECT_TRUE(f.isOk()) << f.status().message();
    return f.isOk() ? *f : nullptr;
  }
};
using ControlsTest = OverTransports<ControlsFixture>;
FORWARDING_OVER_TRANSPORTS(ControlsTest);

TEST_P(ControlsTest, MarkedRequestIsNotForwardedAgain) {
  const std::string s = cell_->streamOwnedBy(kOwner);
  createAt(kOwner, s);
  expect409PassedThrough(cell_->ferry(kEntry),
                         rawRequest("POST", "/v1/stream/" + s, "x",
                                    "Content-Type: text/plain\r\nStreams-Forwarded: inst-3\r\n"),
                         "marked", s);
}

TEST_P(ControlsTest, UnknownOwnerKeeps409) {
  const std::string s = cell_->streamOwnedBy(kOwner);
  createAt(kOwner, s);
  PeerList peers = cell_->peers();
  peers.erase(peers.begin() + kOwner);  // the table lacks inst-2
  Ferry* f = extraFerry("inst-1", peers);
  ASSERT_NE(f, nullptr);
  expect409PassedThrough(*f, rawRequest("POST", "/v1/stream/" + s, "x"), "unknown_owner", s);
}

TEST_P(ControlsTest, OwnerIsSelfKeeps409) {
  const std::string s = cell_->streamOwnedBy(kOwner);
  createAt(kOwner, s);
  // A ferry that believes it is inst-2 in front of inst-1's instance: the 409 names itself.
  Ferry* f = extraFerry("inst-2", cell_->peers());
  ASSERT_NE(f, nullptr);
  expect409PassedThrough(*f, rawRequest("POST", "/v1/stream/" + s, "x"), "self", s);
}

TEST_P(ControlsTest, OwnerRefusingConnectionsKeeps409) {
  const std::string s = cell_->streamOwnedBy(kOwner);
  createAt(kOwner, s);
  PeerList peers = cell_->peers();
  peers[kOwner].second = cell_->peerUrl(closedPort());
  Ferry* f = extraFerry("inst-1", peers);
  ASSERT_NE(f, nullptr);
  const int64_t before = f->stat(skipped("refused"));
  auto direct =
      rawExchange(cell_->emulator(kEntry).port(), rawRequest("POST", "/v1/stream/" + s, "x"));
  ASSERT_TRUE(direct.isOk()) << direct.status().message();
  auto via = rawVia(*f, rawRequest("POST", "/v1/stream/" + s, "x"));
  ASSERT_TRUE(via.isOk()) << via.status().message();
  expectSameResponse(*direct, *via);
  EXPECT_EQ(f->stat(skipped("refused")), before + 1);
  EXPECT_EQ(f->stat(perOwner("ferry_forward_refused_total", "inst-2")), 1);
  EXPECT_TRUE(appliedAt(kOwner, s).empty());
}

TEST_P(ControlsTest, BodyPastTheReplayLimitKeeps409) {
  const std::string s = cell_->streamOwnedBy(kOwner);
  createAt(kOwner, s);
  // 64 KiB + 1: ferry sent more than it kept.
  expect409PassedThrough(cell_->ferry(kEntry),
                         rawRequest("POST", "/v1/stream/" + s, patternBody(65536 + 1)),
                         "body_over_limit", s);
}

TEST_P(ControlsTest, BodyExactlyAtTheReplayLimitIsForwarded) {
  const std::string s = cell_->streamOwnedBy(kOwner);
  createAt(kOwner, s);
  const std::string body = patternBody(65536);
  auto r = viaFerry(cell_->ferry(kEntry), "POST", "/v1/stream/" + s,
                    {{"content-type", "text/plain"}}, body);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  auto applied = appliedAt(kOwner, s);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].bytes, body.size());
  EXPECT_EQ(applied[0].body_sha256, sha256Hex(body));
}

// ---- Cases the emulator can't produce: a canned local upstream --------------------------------

// Plain listeners (the stand-ins are plain HTTP), over both protocols (/Plain, /H2c).
class CannedControlsTest : public ::testing::TestWithParam<Transport> {
 protected:
  // ferry "inst-1" in front of `local`, with inst-2 -> `owner_` (which would answer 200).
  void startFerry(CannedUpstream& local) {
    auto dir = testing::makeTempDir("ferry-forwarding-canned");
    ASSERT_TRUE(dir.isOk());
    dir_ = *dir;
    const std::string file = *dir + "/urls.json";
    ASSERT_TRUE(writeFileAtomically(file, renderUrlsJson({{"inst-1", url(local.port())},
                                                          {"inst-2", url(owner_.port())}}))
                    .isOk());
    FerrySpec spec;
    spec.instance_name = "inst-1";
    spec.local_port = local.port();
    spec.fleet_file = file;
    spec.log_dir = *dir;
    spec.log_name = "ferry";
    auto f = Ferry::start(spec);
    ASSERT_TRUE(f.isOk()) << f.status().message();
    ferry_ = std::move(*f);
  }

  void expectPassedThrough(CannedUpstream& local, const std::string& request,
                           const std::string& reason) {
    const int64_t before = reason.empty() ? 0 : ferry_->stat(skipped(reason));
    auto direct = rawExchange(local.port(), request);
    ASSERT_TRUE(direct.isOk()) << direct.status().message();
    auto via = isHttp2(GetParam()) ? rawExchangeHttp2(ferry_->port(), request)
                                   : rawExchange(ferry_->port(), request);
    ASSERT_TRUE(via.isOk()) << via.status().message();
    expectSameResponse(*direct, *via);
    if (!reason.empty()) {
      EXPECT_EQ(ferry_->stat(skipped(reason)), before + 1) << reason;
    }
    EXPECT_EQ(ferry_->stat(perOwner("ferry_forward_attempts_total", "inst-2")), 0);
    EXPECT_EQ(owner_.requests(), 0);  // nothing reached the owner
  }

  CannedUpstream owner_{
      "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\nowner"};
  std::unique_ptr<Ferry> ferry_;
  std::string dir_;
  void TearDown() override {
    ferry_.reset();
    testing::removeTempDir(dir_);
  }
};
FORWARDING_OVER_PLAIN_LISTENERS(CannedControlsTest);

TEST_P(CannedControlsTest, InvalidReplayToIsPassedThrough) {
  const std::string body =
      R"({"error":{"code":"not_ring_owner","message":"shard 0 belongs to ?"}})";
  CannedUpstream local(
      "HTTP/1.1 409 Conflict\r\ncontent-type: application/json\r\n"
      "streams-replay-to: bad value/\r\nprisma-streams-origin: inst-1\r\n"
      "content-length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  startFerry(local);
  ASSERT_TRUE(ferry_);
  expectPassedThrough(local, rawRequest("POST", "/v1/stream/x", "abc"), "invalid_header");
}

TEST_P(CannedControlsTest, NonDataPlaneRouteIsNotForwarded) {
  const std::string body = R"({"error":{"code":"not_ring_owner","message":"belongs to inst-2"}})";
  CannedUpstream local(
      "HTTP/1.1 409 Conflict\r\ncontent-type: application/json\r\n"
      "streams-replay-to: inst-2\r\nprisma-streams-origin: inst-1\r\n"
      "content-length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  startFerry(local);
  ASSERT_TRUE(ferry_);
  expectPassedThrough(local, rawRequest("POST", "/v1/debug/x", "abc"), "not_data_plane");
}

TEST_P(CannedControlsTest, NotFoundIsNotForwarded) {
  // Even naming an owner, a 404 is not a redirect.
  const std::string body = R"({"error":{"code":"stream_not_found","message":"x"}})";
  CannedUpstream local(
      "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n"
      "streams-replay-to: inst-2\r\nprisma-streams-origin: inst-1\r\n"
      "content-length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  startFerry(local);
  ASSERT_TRUE(ferry_);
  expectPassedThrough(local, rawRequest("GET", "/v1/stream/x"), "");
}

}  // namespace
}  // namespace ferry::fwdtest
