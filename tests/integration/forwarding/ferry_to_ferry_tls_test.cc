// A cell whose urls.json names https origins served by the ferries themselves (issue #11): each
// ferry's listener speaks TLS (listener.tls) with a certificate from a test CA and requires
// client certificates from the fleet's client CA (mTLS between ferries); the emulators stay
// plain behind them. A client appends through inst-1's ferry (curl over TLS); the 409 from
// inst-1 is forwarded over verified TLS to inst-2's ferry, which passes it to inst-2. A ferry
// without a client certificate cannot forward: its 409 stays, and both sides count it.
// (HttpsCellMutualTlsTest at the end shows the same on the shared https cell.)
#include "integration/certs/test_certs.h"
#include "integration/harness/process.h"
#include "integration/streams_emulator/ownership.h"
#include "tests/integration/forwarding/forwarding_test.h"

namespace ferry::fwdtest {
namespace {

const std::vector<std::string> kMembers = {"inst-1", "inst-2"};
constexpr uint32_t kShards = 16;

std::string httpsUrl(uint16_t port) { return "https://127.0.0.1:" + std::to_string(port); }

struct CurlResult {
  int status = 0;
  std::string out;  // headers and body (curl -i)
};

class FerryToFerryTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::makeTempDir("ferry-f2f-tls");
    ASSERT_TRUE(dir.isOk());
    dir_ = *dir;
    auto write = [this](const std::string& stem, const testing::TestCert& c) {
      ASSERT_TRUE(testing::writeCertFiles(dir_, stem, c).isOk());
    };
    const auto ca = testing::makeCa("fleet server CA");
    const auto client_ca = testing::makeCa("fleet client CA");
    write("ca", ca);
    write("client-ca", client_ca);
    write("server", testing::makeLeaf(ca, {.common_name = "ferry", .ips = {"127.0.0.1"}}));
    write("client", testing::makeLeaf(client_ca, {.common_name = "inst-1", .client = true}));
    for (const auto& name : kMembers) {
      auto e = Emulator::start(name, "inst-1,inst-2", kShards, dir_);
      ASSERT_TRUE(e.isOk()) << e.status().message();
      emulators_.push_back(std::move(*e));
    }
    // The owner's ferry first: the others' tables name its TLS listener.
    owner_ferry_ = startFerry("inst-2", *emulators_[1], 1, withClientCert());
  }
  void TearDown() override {
    ferries_.clear();
    emulators_.clear();
    testing::removeTempDir(dir_);
  }

  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  std::string listenerTls() const {
    return "{cert_file: " + file("server.pem") + ", key_file: " + file("server.key") +
           ", client_ca_file: " + file("client-ca.pem") + ", client_cert: require}";
  }
  std::string withClientCert() const {
    return "{ca_file: " + file("ca.pem") + ", client_cert_file: " + file("client.pem") +
           ", client_key_file: " + file("client.key") + "}";
  }
  std::string withoutClientCert() const { return "{ca_file: " + file("ca.pem") + "}"; }

  // A ferry for `name` whose table names inst-2's ferry (https); its own URL is never used.
  Ferry* startFerry(const std::string& name, Emulator& local, uint16_t owner_port,
                    const std::string& forwarding_tls) {
    const std::string stem = "ferry-" + std::to_string(ferries_.size());
    FerrySpec spec;
    spec.instance_name = name;
    spec.local_port = local.port();
    spec.fleet_file = file("urls-" + stem + ".json");
    spec.log_dir = dir_;
    spec.log_name = stem;
    spec.allow_http_peers = false;
    spec.tls_yaml = forwarding_tls;
    spec.listener_tls_yaml = listenerTls();
    EXPECT_TRUE(writeFileAtomically(
                    spec.fleet_file,
                    renderUrlsJson({{"inst-1", httpsUrl(1)}, {"inst-2", httpsUrl(owner_port)}}))
                    .isOk());
    auto f = Ferry::start(spec);
    EXPECT_TRUE(f.isOk()) << f.status().message();
    if (!f.isOk()) return nullptr;
    ferries_.push_back(std::move(*f));
    return ferries_.back().get();
  }

  std::string streamOwnedByInst2(const std::string& prefix) const {
    for (int n = 0;; ++n) {
      std::string s = prefix + "-" + std::to_string(n);
      if (streams::ownerIndex(s, kShards, kMembers) == 1) return s;
    }
  }

  // curl over TLS to `ferry`, verifying it against the fleet CA, with the client certificate.
  CurlResult curl(Ferry& ferry, const std::string& method, const std::string& path,
                  const std::string& body) {
    std::vector<std::string> argv = {"/usr/bin/curl",
                                     "-sS",
                                     "-i",
                                     "--cacert",
                                     file("ca.pem"),
                                     "--cert",
                                     file("client.pem"),
                                     "--key",
                                     file("client.key"),
                                     "-X",
                                     method,
                                     "-H",
                                     "content-type: text/plain",
                                     "-w",
                                     "\nstatus=%{http_code}\n"};
    if (!body.empty()) {
      argv.push_back("--data-binary");
      argv.push_back(body);
    }
    argv.push_back(httpsUrl(ferry.port()) + path);
    auto p = testing::Process::start({.argv = argv, .log_dir = dir_});
    CurlResult result;
    if (!p.isOk()) return result;
    (*p)->waitExit(kWait);
    result.out = (*p)->stdoutText();
    const auto at = result.out.rfind("status=");
    if (at != std::string::npos) result.status = std::atoi(result.out.c_str() + at + 7);
    return result;
  }

  std::string dir_;
  std::vector<std::unique_ptr<Emulator>> emulators_;
  std::vector<std::unique_ptr<Ferry>> ferries_;
  Ferry* owner_ferry_ = nullptr;
};

TEST_F(FerryToFerryTlsTest, AppendIsForwardedOverMutualTlsToTheOwnersFerry) {
  ASSERT_NE(owner_ferry_, nullptr);
  Ferry* ferry = startFerry("inst-1", *emulators_[0], owner_ferry_->port(), withClientCert());
  ASSERT_NE(ferry, nullptr);
  const std::string s = streamOwnedByInst2("m");
  ASSERT_EQ(curl(*owner_ferry_, "PUT", "/v1/stream/" + s, "").status, 201);
  auto r = curl(*ferry, "POST", "/v1/stream/" + s, "over mtls");
  EXPECT_EQ(r.status, 204) << r.out;
  EXPECT_NE(r.out.find("streams-forwarded-to: inst-2"), std::string::npos) << r.out;
  auto applied = emulators_[1]->applied(s);
  ASSERT_TRUE(applied.isOk());
  ASSERT_EQ(applied->size(), 1u);
  EXPECT_EQ((*applied)[0].body_sha256, sha256Hex("over mtls"));
  EXPECT_EQ((*applied)[0].forwarded_by, "inst-1");
  EXPECT_EQ(ferry->stat(perOwner("ferry_forward_completed_total", "inst-2")), 1);
  EXPECT_EQ(ferry->stat("ferry_upstream_tls_handshakes_total"), 1);
  // The owner's ferry saw the client's PUT and the forward, both over verified mTLS.
  EXPECT_EQ(owner_ferry_->stat(R"(ferry_downstream_tls_handshakes_total{outcome="ok"})"), 2);
}

TEST_F(FerryToFerryTlsTest, AFerryWithoutAClientCertificateCannotForwardAndKeepsTheLocal409) {
  ASSERT_NE(owner_ferry_, nullptr);
  Ferry* ferry = startFerry("inst-1", *emulators_[0], owner_ferry_->port(), withoutClientCert());
  ASSERT_NE(ferry, nullptr);
  const std::string s = streamOwnedByInst2("n");
  ASSERT_EQ(curl(*owner_ferry_, "PUT", "/v1/stream/" + s, "").status, 201);
  auto r = curl(*ferry, "POST", "/v1/stream/" + s, "refused");
  EXPECT_EQ(r.status, 409) << r.out;
  EXPECT_EQ(r.out.find("streams-forwarded-to"), std::string::npos) << r.out;
  EXPECT_EQ(ferry->stat(perOwner("ferry_forward_tls_handshake_failures_total", "inst-2")), 1);
  EXPECT_EQ(ferry->stat(skipped("refused")), 1);
  EXPECT_EQ(owner_ferry_->waitForStat(
                R"(ferry_downstream_tls_handshakes_total{outcome="failed_no_client_cert"})", 1),
            1);
  auto applied = emulators_[1]->applied(s);
  ASSERT_TRUE(applied.isOk());
  EXPECT_TRUE(applied->empty());
}

}  // namespace
}  // namespace ferry::fwdtest

// The same rule on the shared https cell (ForwardingCell kTls, integration/cell/cell_tls.h):
// every listener requires a client certificate from the cell CA. The cell's own ferries
// forward (they present theirs); one more ferry for inst-1 that verifies peers but has no
// client certificate is refused by the owner's ferry: its 409 stays, counted on both sides.
namespace ferry::fwdtest {
namespace {

class HttpsCellMutualTlsTest : public ForwardingTest {
 protected:
  Transport transport() const override { return Transport::kTls; }
};

TEST_F(HttpsCellMutualTlsTest, OnlyAFerryWithAClientCertificateCanForward) {
  const testing::CellTlsFiles* files = cell_->tlsFiles();
  ASSERT_NE(files, nullptr);
  const std::string s = cell_->streamOwnedBy(1, "mtls");
  createAt(1, s);
  Ferry& owner = cell_->ferry(1);

  auto with_cert = viaFerry(cell_->ferry(0), "POST", "/v1/stream/" + s,
                            {{"content-type", "text/plain"}}, "with a client certificate");
  ASSERT_TRUE(with_cert.isOk()) << with_cert.status().message();
  EXPECT_EQ(with_cert->status, 204) << with_cert->body;
  EXPECT_EQ(with_cert->headerOr("streams-forwarded-to"), "inst-2");

  FerrySpec spec;
  spec.instance_name = "inst-1";
  spec.local_port = cell_->emulator(0).port();
  spec.fleet_file = cell_->fleetFile(0);
  spec.listener_tls_yaml = testing::listenerTlsYaml(*files, "inst-1");
  spec.tls_yaml = testing::forwardingTlsYaml(*files, "inst-1", /*with_client_cert=*/false);
  spec.allow_http_peers = false;
  auto without = cell_->startExtraFerry(spec);
  ASSERT_TRUE(without.isOk()) << without.status().message();
  const int64_t refused_before =
      owner.stat(R"(ferry_downstream_tls_handshakes_total{outcome="failed_no_client_cert"})");
  auto r = viaFerry(**without, "POST", "/v1/stream/" + s, {{"content-type", "text/plain"}},
                    "without one");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 409) << r->body;
  EXPECT_EQ(r->header("streams-forwarded-to"), nullptr);
  EXPECT_EQ((*without)->stat(perOwner("ferry_forward_tls_handshake_failures_total", "inst-2")), 1);
  EXPECT_EQ((*without)->stat(skipped("refused")), 1);
  EXPECT_EQ(
      owner.waitForStat(R"(ferry_downstream_tls_handshakes_total{outcome="failed_no_client_cert"})",
                        refused_before + 1),
      refused_before + 1);
  auto applied = appliedAt(1, s);
  ASSERT_EQ(applied.size(), 1u);  // only the forward from the ferry with a certificate
  EXPECT_EQ(applied[0].body_sha256, sha256Hex("with a client certificate"));
}

}  // namespace
}  // namespace ferry::fwdtest
