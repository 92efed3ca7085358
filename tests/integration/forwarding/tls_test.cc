// HTTPS owners (docs/forwarding.md: a fleet's peer URLs are https origins).
// A ferry with its default policy (https peers only) fronts a plain-HTTP instance inst-1; the
// owner inst-2 is an emulator serving HTTPS with certificates made for the test. A forward
// reaches the owner over TLS; every way the handshake can fail (unknown CA, wrong name, expired
// certificate, plain HTTP behind an https URL, a client certificate the owner refuses) is a
// refused connect: the local 409 goes to the client unchanged and the owner saw nothing.
#include <rapidjson/document.h>

#include <csignal>
#include <fstream>
#include <iterator>

#include "integration/certs/test_certs.h"
#include "integration/streams_emulator/ownership.h"
#include "tests/integration/forwarding/forwarding_test.h"
#include "tests/support/tls/scripted_tls_owner.h"

namespace ferry::fwdtest {
namespace {

const std::vector<std::string> kMembers = {"inst-1", "inst-2"};
constexpr uint32_t kShards = 16;
constexpr char kTlsListening[] = R"(^streams-emulator \S+ listening tls on 127\.0\.0\.1:(\d+))";

std::string httpsUrl(const std::string& host, uint16_t port) {
  return "https://" + host + ":" + std::to_string(port);
}

class TlsForwardingTest : public ::testing::Test {
 protected:
  // Certificates once per suite: a trusted CA and an untrusted one, server certificates for
  // 127.0.0.1/localhost (good, untrusted, wrong name, expired), a client CA and client cert.
  static void SetUpTestSuite() {
    auto dir = testing::makeTempDir("ferry-tls-certs");
    ASSERT_TRUE(dir.isOk());
    certs_ = new std::string(*dir);
    auto write = [](const std::string& stem, const testing::TestCert& c) {
      ASSERT_TRUE(testing::writeCertFiles(*certs_, stem, c).isOk());
    };
    const auto ca = testing::makeCa("ferry test CA");
    const auto other_ca = testing::makeCa("someone else's CA");
    const auto client_ca = testing::makeCa("ferry test client CA");
    write("ca", ca);
    write("client-ca", client_ca);
    testing::LeafOptions owner{.common_name = "inst-2", .dns = {"localhost"}, .ips = {"127.0.0.1"}};
    write("server", testing::makeLeaf(ca, owner));
    write("untrusted", testing::makeLeaf(other_ca, owner));
    testing::LeafOptions wrong_name;
    wrong_name.dns = {"other.streams.internal"};
    write("wrong-name", testing::makeLeaf(ca, wrong_name));
    testing::LeafOptions expired = owner;
    expired.not_before_days = -30;
    expired.not_after_days = -1;
    write("expired", testing::makeLeaf(ca, expired));
    testing::LeafOptions client;
    client.common_name = "inst-1";
    client.client = true;
    write("client", testing::makeLeaf(client_ca, client));
  }
  static void TearDownTestSuite() {
    if (certs_ != nullptr) testing::removeTempDir(*certs_);
    delete certs_;
    certs_ = nullptr;
  }
  static std::string cert(const std::string& file) { return *certs_ + "/" + file; }

  void SetUp() override {
    auto dir = testing::makeTempDir("ferry-tls");
    ASSERT_TRUE(dir.isOk());
    dir_ = *dir;
    auto local = Emulator::start("inst-1", "inst-1,inst-2", kShards, dir_);
    ASSERT_TRUE(local.isOk()) << local.status().message();
    local_ = std::move(*local);
    ASSERT_TRUE(startOwner("server").isOk());
  }
  void TearDown() override {
    ferries_.clear();
    owners_.clear();
    local_.reset();
    testing::removeTempDir(dir_);
  }

  struct Owner {
    std::unique_ptr<Emulator> emulator;
    uint16_t tls_port = 0;
  };
  // Starts an inst-2 emulator serving HTTPS with `<stem>.pem`; the first one is owner().
  StatusOr<Owner*> startOwner(const std::string& stem, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--tls-cert", cert(stem + ".pem"), "--tls-key",
                                     cert(stem + ".key")};
    args.insert(args.end(), extra.begin(), extra.end());
    auto e = Emulator::start("inst-2", "inst-1,inst-2", kShards, dir_, args);
    if (!e.isOk()) return e.status();
    auto line = (*e)->process().waitForLine(kTlsListening, kWait);
    if (!line.isOk()) return line.status();
    auto owner = std::make_unique<Owner>();
    owner->emulator = std::move(*e);
    owner->tls_port = static_cast<uint16_t>(std::stoi(line->at(1)));
    owners_.push_back(std::move(owner));
    return owners_.back().get();
  }
  Owner& owner() { return *owners_.front(); }

  // A ferry for inst-1 (https peers only, the default) whose table says inst-2 = `owner_url`.
  Ferry& startFerry(const std::string& owner_url, const std::string& tls_yaml) {
    const std::string name = "ferry-" + std::to_string(ferries_.size());
    FerrySpec spec;
    spec.instance_name = "inst-1";
    spec.local_port = local_->port();
    spec.fleet_file = dir_ + "/urls-" + name + ".json";
    spec.log_dir = dir_;
    spec.log_name = name;
    spec.allow_http_peers = false;
    spec.tls_yaml = tls_yaml;
    // inst-1 is this ferry's own instance: its URL is never used.
    EXPECT_TRUE(writeFileAtomically(
                    spec.fleet_file,
                    renderUrlsJson({{"inst-1", "https://127.0.0.1:1"}, {"inst-2", owner_url}}))
                    .isOk());
    auto f = Ferry::start(spec);
    EXPECT_TRUE(f.isOk()) << f.status().message();
    if (!f.isOk()) std::abort();
    ferries_.push_back(std::move(*f));
    return *ferries_.back();
  }
  std::string trustingCa() const { return "{ca_file: " + cert("ca.pem") + "}"; }

  std::string streamOwnedByOwner(const std::string& prefix) const {
    for (int n = 0;; ++n) {
      std::string s = prefix + "-" + std::to_string(n);
      if (streams::ownerIndex(s, kShards, kMembers) == 1) return s;
    }
  }
  // Creates `s` at the owner directly (its plain listener; the same store as its HTTPS one).
  void createAtOwner(const std::string& s) {
    auto r = httpRequest(owner().emulator->port(), "PUT", "/v1/stream/" + s,
                         {{"content-type", "text/plain"}});
    ASSERT_TRUE(r.isOk() && r->status == 201) << (r.isOk() ? r->body : r.status().message());
  }
  uint64_t tlsConnectionsAccepted(Emulator& e) {
    rapidjson::Document d;
    const std::string json = e.requests();
    d.Parse(json.c_str());
    if (!d.IsObject() || !d.HasMember("tls_connections_accepted")) return UINT64_MAX;
    return d["tls_connections_accepted"].GetUint64();
  }

  // An append through `ferry` to a stream the owner has: what the client got, checked against
  // the local 409 (unchanged) and the stats of a refused forward.
  void expectRefusedByHandshake(Ferry& ferry, const std::string& prefix) {
    const std::string s = streamOwnedByOwner(prefix);
    createAtOwner(s);
    const std::string request =
        rawRequest("POST", "/v1/stream/" + s, "not forwarded", "Content-Type: text/plain\r\n");
    auto direct = rawExchange(local_->port(), request);
    ASSERT_TRUE(direct.isOk()) << direct.status().message();
    ASSERT_NE(direct->status_line.find("409"), std::string::npos) << direct->raw;
    auto via = rawExchange(ferry.port(), request);
    ASSERT_TRUE(via.isOk()) << via.status().message();
    expectSameResponse(*direct, *via);
    EXPECT_EQ(ferry.stat(perOwner("ferry_forward_refused_total", "inst-2")), 1);
    EXPECT_EQ(ferry.stat(perOwner("ferry_forward_tls_handshake_failures_total", "inst-2")), 1);
    EXPECT_EQ(ferry.stat(skipped("refused")), 1);
    EXPECT_EQ(ferry.stat("ferry_upstream_tls_handshake_failures_total"), 1);
    EXPECT_EQ(ferry.stat(perOwner("ferry_forward_completed_total", "inst-2")), 0);
    auto applied = owner().emulator->applied(s);
    ASSERT_TRUE(applied.isOk());
    EXPECT_TRUE(applied->empty());
  }

  static std::string* certs_;
  std::string dir_;
  std::unique_ptr<Emulator> local_;
  std::vector<std::unique_ptr<Owner>> owners_;
  std::vector<std::unique_ptr<Ferry>> ferries_;
};
std::string* TlsForwardingTest::certs_ = nullptr;

TEST_F(TlsForwardingTest, AppendIsForwardedToAnHttpsOwner) {
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", owner().tls_port), trustingCa());
  const std::string s = streamOwnedByOwner("a");
  createAtOwner(s);
  auto r = httpRequest(ferry.port(), "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}},
                       "over tls");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  EXPECT_EQ(r->headerOr("prisma-streams-origin"), "inst-2");
  auto applied = owner().emulator->applied(s);
  ASSERT_TRUE(applied.isOk());
  ASSERT_EQ(applied->size(), 1u);
  EXPECT_EQ((*applied)[0].body_sha256, sha256Hex("over tls"));
  EXPECT_EQ((*applied)[0].forwarded_by, "inst-1");
  EXPECT_EQ(tlsConnectionsAccepted(*owner().emulator), 1u);
  EXPECT_EQ(ferry.stat("ferry_upstream_tls_handshakes_total"), 1);
  EXPECT_EQ(ferry.stat(perOwner("ferry_forward_completed_total", "inst-2")), 1);
}

// SNI and the certificate's DNS name: the URL names the owner by host name.
TEST_F(TlsForwardingTest, OwnerNamedByHostNameIsVerifiedByName) {
  Ferry& ferry = startFerry(httpsUrl("localhost", owner().tls_port), trustingCa());
  const std::string s = streamOwnedByOwner("n");
  createAtOwner(s);
  auto r = httpRequest(ferry.port(), "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}},
                       "by name");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
}

TEST_F(TlsForwardingTest, SequentialForwardsShareOnePooledTlsConnection) {
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", owner().tls_port), trustingCa());
  const std::string s = streamOwnedByOwner("pool");
  createAtOwner(s);
  for (const char* body : {"first", "second"}) {
    auto r = httpRequest(ferry.port(), "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}},
                         body);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->status, 204) << r->body;
    EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  }
  auto applied = owner().emulator->applied(s);
  ASSERT_TRUE(applied.isOk());
  EXPECT_EQ(applied->size(), 2u);
  EXPECT_EQ(tlsConnectionsAccepted(*owner().emulator), 1u);
  EXPECT_EQ(ferry.stat("ferry_upstream_tls_handshakes_total"), 1);
}

TEST_F(TlsForwardingTest, SseFeedStreamsEventsOverTls) {
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", owner().tls_port), trustingCa());
  const std::string s = streamOwnedByOwner("sse");
  createAtOwner(s);
  const uint16_t owner_plain = owner().emulator->port();
  ASSERT_TRUE(
      httpRequest(owner_plain, "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}}, "one")
          .isOk());
  HttpClient c;
  ASSERT_TRUE(c.connect(ferry.port()).isOk());
  ASSERT_TRUE(c.sendRequest("GET", "/v1/stream/" + s + "?offset=-1&live=sse").isOk());
  auto head = c.readResponseHead(Ms(5000));
  ASSERT_TRUE(head.isOk()) << head.status().message();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headerOr("streams-forwarded-to"), "inst-2");
  auto first = c.readBodyUntil("\n\n", Ms(5000));
  ASSERT_TRUE(first.isOk()) << first.status().message();
  EXPECT_NE(first->find("event: data"), std::string::npos) << *first;
  auto control = c.readBodyUntil("\n\n", Ms(5000));
  ASSERT_TRUE(control.isOk()) << control.status().message();
  // The feed is still open: the next event must arrive as it is sent.
  ASSERT_TRUE(
      httpRequest(owner_plain, "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}}, "two")
          .isOk());
  auto second = c.readBodyUntil("\n\n", Ms(5000));
  ASSERT_TRUE(second.isOk()) << second.status().message();
  EXPECT_NE(second->find("event: data"), std::string::npos) << *second;
  EXPECT_NE(second->find("dHdv"), std::string::npos) << *second;  // base64("two")
  auto del = httpRequest(owner_plain, "DELETE", "/v1/stream/" + s);
  ASSERT_TRUE(del.isOk());
  auto rest = c.readResponse(Ms(5000));
  ASSERT_TRUE(rest.isOk()) << rest.status().message();
  EXPECT_NE(rest->body.find("streamClosed"), std::string::npos) << rest->body;
}

// 8 MiB through TLS: partial SSL writes at the owner, many records and read budgets at ferry,
// and the watermarks between ferry's upstream and downstream sides.
TEST_F(TlsForwardingTest, LargeReadArrivesIntact) {
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", owner().tls_port), trustingCa());
  const std::string s = streamOwnedByOwner("big");
  createAtOwner(s);
  const std::string body = patternBody(8 << 20, 7);
  auto put = httpRequest(owner().emulator->port(), "POST", "/v1/stream/" + s,
                         {{"content-type", "text/plain"}}, body, Ms(30000));
  ASSERT_TRUE(put.isOk() && put->status / 100 == 2);
  auto r = httpRequest(ferry.port(), "GET", "/v1/stream/" + s + "?offset=-1", {}, {}, Ms(60000));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  ASSERT_EQ(r->body.size(), body.size());
  EXPECT_EQ(sha256Hex(r->body), sha256Hex(body));
}

TEST_F(TlsForwardingTest, OwnerSignedByAnUnknownCaKeepsThe409) {
  auto untrusted = startOwner("untrusted");
  ASSERT_TRUE(untrusted.isOk()) << untrusted.status().message();
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", (*untrusted)->tls_port), trustingCa());
  expectRefusedByHandshake(ferry, "ca");
}

TEST_F(TlsForwardingTest, OwnerWithTheWrongNameKeepsThe409) {
  auto wrong = startOwner("wrong-name");
  ASSERT_TRUE(wrong.isOk()) << wrong.status().message();
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", (*wrong)->tls_port), trustingCa());
  expectRefusedByHandshake(ferry, "name");
}

TEST_F(TlsForwardingTest, OwnerWithAnExpiredCertificateKeepsThe409) {
  auto expired = startOwner("expired");
  ASSERT_TRUE(expired.isOk()) << expired.status().message();
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", (*expired)->tls_port), trustingCa());
  expectRefusedByHandshake(ferry, "exp");
}

TEST_F(TlsForwardingTest, OwnerSpeakingPlainHttpOnAnHttpsUrlKeepsThe409) {
  // The owner's plain listener behind an https URL: it answers the ClientHello with a 400.
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", owner().emulator->port()), trustingCa());
  expectRefusedByHandshake(ferry, "plain");
}

TEST_F(TlsForwardingTest, VerifyOffAcceptsAnUnknownCa) {
  auto untrusted = startOwner("untrusted");
  ASSERT_TRUE(untrusted.isOk()) << untrusted.status().message();
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", (*untrusted)->tls_port), "{verify: false}");
  EXPECT_NE(ferry.process().stderrText().find("WARNING: forwarding.tls.verify is false"),
            std::string::npos);
  const std::string s = streamOwnedByOwner("nv");
  auto create = httpRequest((*untrusted)->emulator->port(), "PUT", "/v1/stream/" + s, {});
  ASSERT_TRUE(create.isOk() && create->status == 201);
  auto r = httpRequest(ferry.port(), "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}},
                       "unverified");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
}

class MutualTlsTest : public TlsForwardingTest {
 protected:
  void SetUp() override {
    TlsForwardingTest::SetUp();
    auto owner = startOwner("server", {"--tls-client-ca", cert("client-ca.pem")});
    ASSERT_TRUE(owner.isOk()) << owner.status().message();
    mtls_ = *owner;
  }
  Owner* mtls_ = nullptr;
};

TEST_F(MutualTlsTest, OwnerRequiringAClientCertificateAcceptsFerrysCertificate) {
  Ferry& ferry =
      startFerry(httpsUrl("127.0.0.1", mtls_->tls_port),
                 "{ca_file: " + cert("ca.pem") + ", client_cert_file: " + cert("client.pem") +
                     ", client_key_file: " + cert("client.key") + "}");
  const std::string s = streamOwnedByOwner("m");
  auto create = httpRequest(mtls_->emulator->port(), "PUT", "/v1/stream/" + s, {});
  ASSERT_TRUE(create.isOk() && create->status == 201);
  auto r = httpRequest(ferry.port(), "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}},
                       "mutual");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  auto applied = mtls_->emulator->applied(s);
  ASSERT_TRUE(applied.isOk());
  EXPECT_EQ(applied->size(), 1u);
}

// TLS 1.3: ferry's handshake completes before the owner checks the (missing) client
// certificate; the owner's alert arrives after the request was written, yet the owner
// processed nothing of it: still the local 409, counted as a handshake failure.
TEST_F(MutualTlsTest, OwnerRequiringAClientCertificateRefusesFerryWithoutOne) {
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", mtls_->tls_port), trustingCa());
  const std::string s = streamOwnedByOwner("mno");
  auto create = httpRequest(mtls_->emulator->port(), "PUT", "/v1/stream/" + s, {});
  ASSERT_TRUE(create.isOk() && create->status == 201);
  const std::string request =
      rawRequest("POST", "/v1/stream/" + s, "no cert", "Content-Type: text/plain\r\n");
  auto direct = rawExchange(local_->port(), request);
  ASSERT_TRUE(direct.isOk()) << direct.status().message();
  auto via = rawExchange(ferry.port(), request);
  ASSERT_TRUE(via.isOk()) << via.status().message();
  expectSameResponse(*direct, *via);
  EXPECT_EQ(ferry.stat(perOwner("ferry_forward_refused_total", "inst-2")), 1);
  EXPECT_EQ(ferry.stat(perOwner("ferry_forward_tls_handshake_failures_total", "inst-2")), 1);
  auto applied = mtls_->emulator->applied(s);
  ASSERT_TRUE(applied.isOk());
  EXPECT_TRUE(applied->empty());
}

// SIGHUP re-reads forwarding.tls's files (rotated in place, as operators do): new connections
// use the new client certificate; a file that fails to load keeps the last good context, and
// forwarding goes on with it (here to a new owner, so over a new connection).
TEST_F(MutualTlsTest, SighupReloadsTheTlsFilesAndKeepsTheLastGoodOnesOnError) {
  const std::string crt = dir_ + "/rotated-client.pem";
  const std::string key = dir_ + "/rotated-client.key";
  const auto stranger_ca = testing::makeCa("a client CA the owner does not trust");
  const auto stale = testing::makeLeaf(stranger_ca, {.common_name = "inst-1", .client = true});
  ASSERT_TRUE(testing::writeFile(crt, stale.cert_pem).isOk());
  ASSERT_TRUE(testing::writeFile(key, stale.key_pem).isOk());
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", mtls_->tls_port),
                            "{ca_file: " + cert("ca.pem") + ", client_cert_file: " + crt +
                                ", client_key_file: " + key + "}");
  const std::string s = streamOwnedByOwner("rot");
  auto create = httpRequest(mtls_->emulator->port(), "PUT", "/v1/stream/" + s, {});
  ASSERT_TRUE(create.isOk() && create->status == 201);
  auto append = [&](const std::string& body) {
    auto r = httpRequest(ferry.port(), "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}},
                         body);
    EXPECT_TRUE(r.isOk()) << r.status().message();
    return r.isOk() ? r->status : 0;
  };
  // The owner refuses the stale certificate: the local 409.
  EXPECT_EQ(append("stale"), 409);
  EXPECT_EQ(ferry.stat(perOwner("ferry_forward_tls_handshake_failures_total", "inst-2")), 1);

  // Rotated to a certificate the owner's client CA signed.
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  ASSERT_TRUE(testing::writeFile(crt, read(cert("client.pem"))).isOk());
  ASSERT_TRUE(testing::writeFile(key, read(cert("client.key"))).isOk());
  ferry.process().signal(SIGHUP);
  ASSERT_EQ(ferry.waitForStat("ferry_tls_reloads_total", 1), 1);
  EXPECT_EQ(append("rotated"), 204);

  // A broken certificate file, and the owner moves: the new connection uses the last good
  // context.
  auto moved = startOwner("server", {"--tls-client-ca", cert("client-ca.pem")});
  ASSERT_TRUE(moved.isOk()) << moved.status().message();
  auto create2 = httpRequest((*moved)->emulator->port(), "PUT", "/v1/stream/" + s, {});
  ASSERT_TRUE(create2.isOk() && create2->status == 201);
  ASSERT_TRUE(testing::writeFile(crt, "not a certificate\n").isOk());
  const uint64_t version = ferry.peersVersion();
  ASSERT_TRUE(
      writeFileAtomically(dir_ + "/urls-ferry-0.json",
                          renderUrlsJson({{"inst-1", "https://127.0.0.1:1"},
                                          {"inst-2", httpsUrl("127.0.0.1", (*moved)->tls_port)}}))
          .isOk());
  ferry.process().signal(SIGHUP);
  ASSERT_EQ(ferry.waitForStat("ferry_tls_reload_failures_total", 1), 1);
  ASSERT_GT(ferry.waitForPeersVersionAbove(version), version);
  EXPECT_EQ(ferry.stat("ferry_tls_reloads_total"), 1);
  EXPECT_NE(ferry.process().stderrText().find("forwarding.tls.client_cert_file"), std::string::npos)
      << ferry.process().stderrText();
  EXPECT_EQ(append("after a broken reload"), 204);
  auto applied = (*moved)->emulator->applied(s);
  ASSERT_TRUE(applied.isOk());
  EXPECT_EQ(applied->size(), 1u);
}

// Scripted owners (tests/support/tls/scripted_tls_owner.h): an OpenSSL server that answers the
// forwarded request with chosen bytes and a chosen ending.
class ScriptedOwnerTest : public TlsForwardingTest {
 protected:
  testing::ScriptedTlsOwner& startScripted(testing::TlsOwnerScript script) {
    scripted_ = std::make_unique<testing::ScriptedTlsOwner>(cert("server.pem"), cert("server.key"),
                                                            std::move(script));
    return *scripted_;
  }
  // An append forwarded to the scripted owner: the client sees the response head, then the
  // connection closes before the body ends (a cut), never a clean end.
  void expectCut(Ferry& ferry, const std::string& prefix) {
    const std::string s = streamOwnedByOwner(prefix);
    createAtOwner(s);
    HttpClient c;
    ASSERT_TRUE(c.connect(ferry.port()).isOk());
    ASSERT_TRUE(
        c.sendRequest("POST", "/v1/stream/" + s, {{"content-type", "text/plain"}}, "x").isOk());
    auto r = c.readResponse(Ms(10000));
    if (r.isOk()) {
      // Close-delimited on the client side too: only the stats can tell the cut from an end.
      EXPECT_EQ(r->status, 200);
    } else {
      EXPECT_EQ(c.partial().status, 200);
      EXPECT_FALSE(c.partial().complete);
    }
    EXPECT_TRUE(c.isClosedByPeer(Ms(5000)));
    EXPECT_EQ(ferry.waitForStat(perOwner("ferry_forward_cut_total", "inst-2"), 1), 1);
    EXPECT_EQ(ferry.stat("ferry_responses_cut_total"), 1);
    EXPECT_EQ(ferry.stat(perOwner("ferry_forward_completed_total", "inst-2")), 0);
  }
  std::unique_ptr<testing::ScriptedTlsOwner> scripted_;
};

// RFC 8446 section 6.1: an EOF without close_notify is a truncation, even where a plain TCP
// close would end a close-delimited body (RFC 9112 section 6.3).
TEST_F(ScriptedOwnerTest, CloseDelimitedBodyTruncatedWithoutCloseNotifyIsCut) {
  auto& owner = startScripted({.response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"
                                           "part of a body with no framing",
                               .end = testing::TlsOwnerScript::End::TcpClose});
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", owner.port()), trustingCa());
  expectCut(ferry, "trunc");
  EXPECT_EQ(owner.responsesWritten(), 1);
}

// The same close-delimited body ended by close_notify is a complete response: the control for
// the test above.
TEST_F(ScriptedOwnerTest, CloseDelimitedBodyEndedByCloseNotifyCompletes) {
  auto& owner = startScripted({.response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"
                                           "a whole body with no framing",
                               .end = testing::TlsOwnerScript::End::CloseNotify});
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", owner.port()), trustingCa());
  const std::string s = streamOwnedByOwner("whole");
  createAtOwner(s);
  auto r =
      httpRequest(ferry.port(), "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}}, "x");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "a whole body with no framing");
  EXPECT_EQ(ferry.waitForStat(perOwner("ferry_forward_completed_total", "inst-2"), 1), 1);
  EXPECT_EQ(ferry.stat(perOwner("ferry_forward_cut_total", "inst-2")), 0);
}

TEST_F(ScriptedOwnerTest, ContentLengthNotReachedBeforeAnEofWithoutCloseNotifyIsCut) {
  auto& owner = startScripted({.response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                           "Content-Length: 100\r\n\r\nonly twenty bytes...",
                               .end = testing::TlsOwnerScript::End::TcpClose});
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", owner.port()), trustingCa());
  expectCut(ferry, "short");
}

// Handshake done, request written, then a reset before any response byte: the owner may have
// applied it, so 503 forward_failed (contract, Failures), not the 409.
TEST_F(ScriptedOwnerTest, ResetAfterTheHandshakeAndTheRequestGives503ForwardFailed) {
  auto& owner = startScripted({.action = testing::TlsOwnerScript::Action::ResetAfterRequest});
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", owner.port()), trustingCa());
  const std::string s = streamOwnedByOwner("rst");
  createAtOwner(s);
  auto r = httpRequest(ferry.port(), "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}},
                       "maybe applied");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_EQ(r->headerOr("retry-after"), "1");
  EXPECT_EQ(r->headerOr("cache-control"), "no-store");
  EXPECT_NE(r->body.find("\"forward_failed\""), std::string::npos) << r->body;
  EXPECT_EQ(owner.handshakes(), 1);
  EXPECT_EQ(owner.requests(), 1);
  EXPECT_EQ(ferry.stat(perOwner("ferry_forward_failed_total", "inst-2")), 1);
  EXPECT_EQ(ferry.stat(perOwner("ferry_forward_tls_handshake_failures_total", "inst-2")), 0);
}

TEST_F(ScriptedOwnerTest, HandshakeAlertKeepsThe409) {
  auto& owner = startScripted({.action = testing::TlsOwnerScript::Action::HandshakeAlert});
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", owner.port()), trustingCa());
  expectRefusedByHandshake(ferry, "alert");
  EXPECT_EQ(owner.handshakes(), 0);
  EXPECT_EQ(owner.requests(), 0);
}

// Pooled reconnects resume the TLS session: the owner closes after each response
// (Connection: close), so the second forward makes a new connection, which offers the ticket
// the first one received.
TEST_F(ScriptedOwnerTest, SecondConnectionToTheSameOwnerResumesTheSession) {
  auto& owner = startScripted({.response = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
                               .end = testing::TlsOwnerScript::End::CloseNotify});
  Ferry& ferry = startFerry(httpsUrl("127.0.0.1", owner.port()), trustingCa());
  const std::string s = streamOwnedByOwner("resume");
  createAtOwner(s);
  for (const char* body : {"first", "second"}) {
    auto r = httpRequest(ferry.port(), "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}},
                         body);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->status, 204) << r->body;
  }
  EXPECT_EQ(owner.handshakes(), 2);
  EXPECT_EQ(owner.resumedHandshakes(), 1);
  EXPECT_EQ(ferry.stat("ferry_upstream_tls_handshakes_total"), 2);
  EXPECT_EQ(ferry.stat("ferry_upstream_tls_resumptions_total"), 1);
}

}  // namespace
}  // namespace ferry::fwdtest
