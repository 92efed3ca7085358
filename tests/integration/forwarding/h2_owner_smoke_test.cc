// Multiplexed HTTP/2 to owners (issue #13), end to end: client -> ferry A (inst-1) -> its
// emulator's 409 -> owner ferry B (inst-2) over https, with forwarding.owner_protocol at its
// default (auto: ALPN offers [h2, http/1.1]) -> inst-2's emulator. Sequential and concurrent
// forwards share ferry A's one h2 connection to B; an owner whose listener offers only
// http/1.1 is still reached (the pool falls back to HTTP/1.1 for it).
#include <string>
#include <vector>

#include "integration/certs/test_certs.h"
#include "integration/harness/process.h"
#include "integration/streams_emulator/ownership.h"
#include "tests/integration/forwarding/forwarding_test.h"

namespace ferry::fwdtest {
namespace {

const std::vector<std::string> kMembers = {"inst-1", "inst-2"};
constexpr uint32_t kShards = 16;
constexpr char kH2Connections[] = R"(ferry_owner_connections_active{protocol="h2"})";
constexpr char kHttp1Connections[] = R"(ferry_owner_connections_active{protocol="http1"})";

std::string httpsUrl(uint16_t port) { return "https://127.0.0.1:" + std::to_string(port); }

class H2OwnerSmokeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::makeTempDir("ferry-h2-owner");
    ASSERT_TRUE(dir.isOk());
    dir_ = *dir;
    const auto ca = testing::makeCa("fleet server CA");
    ASSERT_TRUE(testing::writeCertFiles(dir_, "ca", ca).isOk());
    ASSERT_TRUE(
        testing::writeCertFiles(
            dir_, "server", testing::makeLeaf(ca, {.common_name = "ferry", .ips = {"127.0.0.1"}}))
            .isOk());
    for (const auto& name : kMembers) {
      auto e = Emulator::start(name, "inst-1,inst-2", kShards, dir_);
      ASSERT_TRUE(e.isOk()) << e.status().message();
      emulators_.push_back(std::move(*e));
    }
  }
  void TearDown() override {
    ferries_.clear();
    emulators_.clear();
    testing::removeTempDir(dir_);
  }

  std::string file(const std::string& name) const { return dir_ + "/" + name; }

  // `alpn` empty: the listener's default ([h2, http/1.1]).
  Ferry* startFerry(const std::string& name, Emulator& local, uint16_t owner_port,
                    const std::string& alpn = "") {
    const std::string stem = "ferry-" + std::to_string(ferries_.size());
    FerrySpec spec;
    spec.instance_name = name;
    spec.local_port = local.port();
    spec.fleet_file = file("urls-" + stem + ".json");
    spec.log_dir = dir_;
    spec.log_name = stem;
    spec.allow_http_peers = false;
    spec.tls_yaml = "{ca_file: " + file("ca.pem") + "}";
    spec.listener_tls_yaml = "{cert_file: " + file("server.pem") +
                             ", key_file: " + file("server.key") +
                             (alpn.empty() ? "" : ", alpn: " + alpn) + "}";
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

  // curl over TLS (HTTP/1.1 to ferry A); started, not waited for.
  std::unique_ptr<testing::Process> curl(Ferry& ferry, const std::string& method,
                                         const std::string& path, const std::string& body) {
    std::vector<std::string> argv = {"/usr/bin/curl",
                                     "-sS",
                                     "-i",
                                     "--http1.1",
                                     "--cacert",
                                     file("ca.pem"),
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
    EXPECT_TRUE(p.isOk());
    return p.isOk() ? std::move(*p) : nullptr;
  }
  static int statusOf(testing::Process& p) {
    p.waitExit(kWait);
    const std::string out = p.stdoutText();
    const auto at = out.rfind("status=");
    return at == std::string::npos ? 0 : std::atoi(out.c_str() + at + 7);
  }
  int run(Ferry& ferry, const std::string& method, const std::string& path,
          const std::string& body) {
    auto p = curl(ferry, method, path, body);
    return p == nullptr ? 0 : statusOf(*p);
  }

  std::string dir_;
  std::vector<std::unique_ptr<Emulator>> emulators_;
  std::vector<std::unique_ptr<Ferry>> ferries_;
};

TEST_F(H2OwnerSmokeTest, SequentialAndConcurrentForwardsShareOneH2Connection) {
  Ferry* owner = startFerry("inst-2", *emulators_[1], 1);
  ASSERT_NE(owner, nullptr);
  Ferry* ferry = startFerry("inst-1", *emulators_[0], owner->port());
  ASSERT_NE(ferry, nullptr);
  const std::string s = streamOwnedByInst2("h2");
  ASSERT_EQ(run(*owner, "PUT", "/v1/stream/" + s, ""), 201);

  constexpr int kSequential = 5;
  for (int i = 0; i < kSequential; ++i) {
    EXPECT_EQ(run(*ferry, "POST", "/v1/stream/" + s, "seq " + std::to_string(i)), 204);
  }
  EXPECT_EQ(ferry->stat(kH2Connections), 1);
  constexpr int kConcurrent = 8;
  std::vector<std::unique_ptr<testing::Process>> clients;
  for (int i = 0; i < kConcurrent; ++i) {
    clients.push_back(curl(*ferry, "POST", "/v1/stream/" + s, "par " + std::to_string(i)));
  }
  for (auto& c : clients) {
    ASSERT_NE(c, nullptr);
    const int status = statusOf(*c);
    // curl's exit code and error say why when there was no answer (status 0).
    EXPECT_EQ(status, 204) << "exit " << c->waitExit(kWait).value_or(-1)
                           << ", stdout: " << c->stdoutText() << ", stderr: " << c->stderrText();
  }
  // Every forward rode the one connection: one TLS handshake, one h2 connection open.
  EXPECT_EQ(ferry->stat(kH2Connections), 1);
  EXPECT_EQ(ferry->stat(kHttp1Connections), 0);
  EXPECT_EQ(ferry->stat("ferry_upstream_tls_handshakes_total"), 1);
  // Counted as each forward ends, which may be just after its client has read the answer.
  EXPECT_TRUE(ferry->waitForStat(perOwner("ferry_forward_completed_total", "inst-2"),
                                 kSequential + kConcurrent));
  EXPECT_EQ(ferry->stat(perOwner("ferry_forward_completed_total", "inst-2")),
            kSequential + kConcurrent);
  EXPECT_EQ(ferry->stat("ferry_owner_h2_streams_active"), 0);
  auto applied = emulators_[1]->applied(s);
  ASSERT_TRUE(applied.isOk());
  EXPECT_EQ(applied->size(), static_cast<size_t>(kSequential + kConcurrent));
  // The owner's ferry saw them arrive as HTTP/2 on one connection.
  EXPECT_EQ(owner->stat("ferry_downstream_http2_connections_total"), 1);
}

TEST_F(H2OwnerSmokeTest, AnOwnerOfferingOnlyHttp1IsStillReachedUnderAuto) {
  Ferry* owner = startFerry("inst-2", *emulators_[1], 1, "[http/1.1]");
  ASSERT_NE(owner, nullptr);
  Ferry* ferry = startFerry("inst-1", *emulators_[0], owner->port());
  ASSERT_NE(ferry, nullptr);
  const std::string s = streamOwnedByInst2("h1");
  ASSERT_EQ(run(*owner, "PUT", "/v1/stream/" + s, ""), 201);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(run(*ferry, "POST", "/v1/stream/" + s, "h1 " + std::to_string(i)), 204);
  }
  EXPECT_EQ(ferry->stat(kH2Connections), 0);
  EXPECT_EQ(ferry->stat(kHttp1Connections), 1);
  EXPECT_EQ(ferry->stat(perOwner("ferry_forward_completed_total", "inst-2")), 3);
  EXPECT_EQ(owner->stat("ferry_downstream_http2_connections_total"), 0);
  auto applied = emulators_[1]->applied(s);
  ASSERT_TRUE(applied.isOk());
  EXPECT_EQ(applied->size(), 3u);
}

}  // namespace
}  // namespace ferry::fwdtest
