// Failures after the forward started: after a request byte reached the owner and before its
// response head -> 503 forward_failed; after the owner's head went to the client -> the
// response is cut; the client leaving -> the forward is cancelled at once.
// FailuresTest runs over the four transports (and with h2 owners); the test that points a ferry
// at a bare instance (no ferry, so no TLS in front of it) runs on plain listeners, over both
// protocols.
#include <rapidjson/document.h>

#include "tests/integration/forwarding/forwarding_test.h"
#include "tests/support/tls/scripted_tls_owner.h"

namespace ferry::fwdtest {
namespace {

constexpr size_t kEntry = 0;
constexpr size_t kOwner = 1;

// Its owner is a bare instance (no ferry, so no TLS in front of it): plain listeners only.
using FailuresPlainTest = OverTransports<ForwardingTest>;
FORWARDING_OVER_PLAIN_LISTENERS(FailuresPlainTest);
using FailuresTest = OverTransports<ForwardingTest>;
FORWARDING_OVER_TRANSPORTS(FailuresTest);
// HTTP/1.1 owners only: the owner is an HTTP/1.1 stand-in (CannedUpstream, or a TLS server
// offering no ALPN).
using FailuresHttp1OwnerTest = OverTransports<ForwardingTest>;
FORWARDING_OVER_HTTP1_OWNERS(FailuresHttp1OwnerTest);

TEST_P(FailuresPlainTest, OwnerFailingAfterSendGives503ForwardFailed) {
  const std::string s = cell_->streamOwnedBy(kOwner, "ff");
  createAt(kOwner, s);
  // inst-1's table points inst-2 at its INSTANCE (no ferry between), which resets every
  // data-plane request once it has read the head: the owner saw the request, no answer came.
  Ferry& ferry = cell_->ferry(kEntry);
  PeerList peers = cell_->peers();
  peers[kOwner].second = url(cell_->emulator(kOwner).port());
  const uint64_t version = ferry.peersVersion();
  ASSERT_TRUE(cell_->writeFleetFile(kEntry, renderUrlsJson(peers)).isOk());
  ASSERT_GT(ferry.waitForPeersVersionAbove(version), version);
  ASSERT_TRUE(cell_->emulator(kOwner).control(R"({"reset":true})"));

  auto r =
      viaFerry(ferry, "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}}, "maybe applied");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  expectForwardFailed503(*r);
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  ASSERT_TRUE(d.IsObject() && d.HasMember("error")) << r->body;
  EXPECT_STREQ(d["error"]["code"].GetString(), "forward_failed");
  EXPECT_TRUE(d["error"]["message"].IsString());
  EXPECT_EQ(ferry.stat(perOwner("ferry_forward_failed_total", "inst-2")), 1);
  // With the reset knob the owner dropped the request at its head: nothing applied (the client
  // can't know that, hence the 503 and not the 409).
  EXPECT_TRUE(appliedAt(kOwner, s).empty());
  EXPECT_TRUE(appliedAt(kEntry, s).empty());
}

// The owner read the WHOLE request, then closed without a response head: it may have applied
// it, so the client gets 503 forward_failed (not the 409, which would invite a replay).
TEST_P(FailuresHttp1OwnerTest, OwnerClosingAfterReadingTheRequestGives503ForwardFailed) {
  const std::string s = cell_->streamOwnedBy(kOwner, "ff2");
  // An owner that reads each request whole, answers nothing and closes: plain, or in the TLS
  // cell an OpenSSL server with inst-2's certificate that resets after the request.
  std::unique_ptr<CannedUpstream> plain_owner;
  std::unique_ptr<testing::ScriptedTlsOwner> tls_owner;
  uint16_t owner_port = 0;
  if (const testing::CellTlsFiles* files = cell_->tlsFiles()) {
    tls_owner = std::make_unique<testing::ScriptedTlsOwner>(
        files->serverCert("inst-2"), files->serverKey("inst-2"),
        testing::TlsOwnerScript{.action = testing::TlsOwnerScript::Action::ResetAfterRequest});
    owner_port = tls_owner->port();
  } else {
    plain_owner = std::make_unique<CannedUpstream>("");
    owner_port = plain_owner->port();
  }
  auto owner_requests = [&] { return tls_owner ? tls_owner->requests() : plain_owner->requests(); };
  Ferry& ferry = cell_->ferry(kEntry);
  PeerList peers = cell_->peers();
  peers[kOwner].second = cell_->peerUrl(owner_port);
  const uint64_t version = ferry.peersVersion();
  ASSERT_TRUE(cell_->writeFleetFile(kEntry, renderUrlsJson(peers)).isOk());
  ASSERT_GT(ferry.waitForPeersVersionAbove(version), version);

  auto r =
      viaFerry(ferry, "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}}, "read whole");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_EQ(r->headerOr("retry-after"), "1");
  EXPECT_NE(r->body.find("\"forward_failed\""), std::string::npos) << r->body;
  EXPECT_EQ(owner_requests(), 1);  // the owner got all of it
  EXPECT_EQ(ferry.stat(perOwner("ferry_forward_failed_total", "inst-2")), 1);
}

TEST_P(FailuresTest, OwnerDyingMidResponseCutsTheClientResponse) {
  const std::string s = cell_->streamOwnedBy(kOwner, "cut");
  createAt(kOwner, s);
  const std::string data = patternBody(1000);
  appendAt(kOwner, s, data);
  // The owner sends its head and 100 body bytes of the read, then closes.
  ASSERT_TRUE(cell_->emulator(kOwner).control(R"({"cut_after_bytes":100})"));

  CellClient c;
  ASSERT_TRUE(connectTo(c, cell_->ferry(kEntry)).isOk());
  ASSERT_TRUE(c.sendRequest("GET", "/v1/stream/" + s + "?offset=-1").isOk());
  auto r = c.readResponse(Ms(10000));
  ASSERT_FALSE(r.isOk()) << "a whole response arrived: " << r->body.size() << " bytes";
  EXPECT_EQ(c.partial().status, 200);
  EXPECT_EQ(c.partial().headerOr("streams-forwarded-to"), "inst-2");
  EXPECT_LT(c.partial().body.size(), data.size());
  EXPECT_FALSE(c.partial().complete);
  if (c.usesHttp2()) {
    // Over HTTP/2 the cut resets the client's stream (RST_STREAM), not its connection, which
    // still serves another request.
    const int32_t cut = c.currentStream();
    EXPECT_TRUE(c.http2().waitForStreamReset(cut, Ms(5000)).has_value())
        << "the cut stream was not reset; closed: " << c.http2().stream(cut).closed;
    const std::string local = cell_->streamOwnedBy(kEntry, "local");  // no owner knob on it
    createAt(kEntry, local);
    ASSERT_TRUE(c.sendRequest("HEAD", "/v1/stream/" + local).isOk());
    auto next = c.readResponse(Ms(10000));
    ASSERT_TRUE(next.isOk()) << next.status().message();
    EXPECT_EQ(next->status, 200);
  } else {
    EXPECT_TRUE(c.isClosedByPeer(Ms(5000)));
  }
  EXPECT_GE(cell_->ferry(kEntry).waitForStat(perOwner("ferry_forward_cut_total", "inst-2"), 1), 1);
}

TEST_P(FailuresTest, ClientLeavingCancelsTheForward) {
  const std::string s = cell_->streamOwnedBy(kOwner, "cancel");
  const std::string tail = createAt(kOwner, s);
  Ferry& entry = cell_->ferry(kEntry);
  Ferry& owner = cell_->ferry(kOwner);
  // Over HTTP/2 the client leaves by resetting its stream; its connection stays open.
  CellClient c;
  ASSERT_TRUE(connectTo(c, entry).isOk());
  ASSERT_TRUE(
      c.sendRequest("GET", "/v1/stream/" + s + "?offset=" + tail + "&live=long-poll&timeout=20")
          .isOk());
  // The forwarded long-poll waits at the owner's side.
  ASSERT_GE(owner.waitForStat("ferry_streams_active", 1), 1);
  ASSERT_EQ(owner.stat("ferry_downstream_connections_active"), 1);
  c.leave();
  // The owner had not answered yet (a long-poll answers when data arrives).
  EXPECT_GE(entry.waitForStat("ferry_forward_cancelled_total{phase=\"before_response\"}", 1), 1);
  // The owner's ferry sees its client (inst-1's ferry) leave at once, not at the 20 s
  // long-poll timeout.
  EXPECT_GE(owner.waitForStat("ferry_downstream_resets_total", 1), 1);
  // Over HTTP/1.1 the forward had its own connection to the owner's ferry, which is closed.
  // Over HTTP/2 it was one stream of the connection inst-1's ferry keeps to that owner: the
  // stream is reset (RST_STREAM) and the forward's work at the owner ends, while the connection
  // stays for the next forward (it closes only once idle, upstream idle_timeout: waiting for
  // that would wait for the wrong thing).
  const auto waitForZero = [](Ferry& ferry, const std::string& series) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    int64_t v = ferry.stat(series);
    while (v != 0 && std::chrono::steady_clock::now() < deadline) v = ferry.stat(series);
    return v;
  };
  if (ownerHttp2(transport())) {
    EXPECT_EQ(waitForZero(entry, "ferry_owner_h2_streams_active"), 0);
    EXPECT_EQ(waitForZero(owner, "ferry_streams_active"), 0);
    EXPECT_EQ(owner.stat("ferry_downstream_connections_active"), 1);
  } else {
    EXPECT_EQ(waitForZero(owner, "ferry_downstream_connections_active"), 0);
  }
  EXPECT_EQ(entry.stat(perOwner("ferry_forward_completed_total", "inst-2")), 0);
}

}  // namespace
}  // namespace ferry::fwdtest
