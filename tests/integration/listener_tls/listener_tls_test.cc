// TLS on ferry's listener (listener.tls): the real ferry binary serving HTTPS on loopback in
// front of a plain upstream, with certificates made in the test (tests/support/tls), against
// curl and OpenSSL clients. Handshake, ALPN, resumption, mTLS and the identity in the access
// log, handshake timeout, wrong-name and expired certificates, rotation under load with SIGHUP,
// a bad file on reload, and each protocol sent to the other's port.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include "integration/certs/test_certs.h"
#include "integration/harness/process.h"
#include "tests/integration/listener_tls/tls_client.h"
#include "tests/integration/proxy/support/fake_upstream.h"
#include "tests/integration/proxy/support/ferry_process.h"
#include "tests/integration/proxy/support/ok_upstream.h"

namespace ferry::itest {
namespace {

constexpr char kOk[] = R"(ferry_downstream_tls_handshakes_total{outcome="ok"})";
constexpr char kResumed[] = "ferry_downstream_tls_resumed_handshakes_total";

std::string failed(const std::string& reason) {
  return R"(ferry_downstream_tls_handshakes_total{outcome="failed_)" + reason + "\"}";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct TlsKeys {
  std::string tls_yaml_extra;  // more lines under listener.tls, each "    key: value\n"
  std::string access_log;
  std::string cert = "server";
  uint16_t upstream_port = 0;  // 0: the OkUpstream
};

class ListenerTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = testing::makeTempDir("ferry-listener-tls-certs");
    ASSERT_TRUE(dir.isOk());
    certs_ = new std::string(*dir);
    auto write = [](const std::string& stem, const testing::TestCert& c) {
      ASSERT_TRUE(testing::writeCertFiles(*certs_, stem, c).isOk());
    };
    const auto ca = testing::makeCa("ferry test CA");
    const auto client_ca = testing::makeCa("ferry test client CA");
    const auto other_ca = testing::makeCa("someone else's CA");
    write("ca", ca);
    write("client-ca", client_ca);
    testing::LeafOptions server{
        .common_name = "ferry-1", .dns = {"localhost"}, .ips = {"127.0.0.1"}};
    write("server", testing::makeLeaf(ca, server));
    server.common_name = "ferry-1-rotated";
    write("rotated", testing::makeLeaf(ca, server));
    testing::LeafOptions wrong_name{.common_name = "elsewhere", .dns = {"other.streams.internal"}};
    write("wrong-name", testing::makeLeaf(ca, wrong_name));
    testing::LeafOptions expired = server;
    expired.not_before_days = -30;
    expired.not_after_days = -1;
    write("expired", testing::makeLeaf(ca, expired));
    testing::LeafOptions client{
        .common_name = "inst-1", .dns = {"inst-1.streams.internal"}, .client = true};
    write("client", testing::makeLeaf(client_ca, client));
    write("stranger", testing::makeLeaf(other_ca, client));
  }
  static void TearDownTestSuite() {
    if (certs_ != nullptr) testing::removeTempDir(*certs_);
    delete certs_;
    certs_ = nullptr;
  }
  static std::string cert(const std::string& file) { return *certs_ + "/" + file; }

  void SetUp() override {
    auto dir = testing::makeTempDir("ferry-listener-tls");
    ASSERT_TRUE(dir.isOk());
    dir_ = *dir;
  }
  // Runs before the members (the ferry logging into dir_) go: the files are unlinked, not in use.
  void TearDown() override { testing::removeTempDir(dir_); }

  // The served certificate lives in the test's directory, so a test can replace it in place.
  void installCert(const std::string& stem) {
    ASSERT_TRUE(testing::writeFile(dir_ + "/cert.pem", readFile(cert(stem + ".pem"))).isOk());
    ASSERT_TRUE(testing::writeFile(dir_ + "/key.pem", readFile(cert(stem + ".key"))).isOk());
  }

  std::string tlsConfig(const TlsKeys& keys) {
    FerryConfigParams params;
    params.upstream_port = keys.upstream_port != 0 ? keys.upstream_port : upstream_.port();
    params.access_log = keys.access_log;
    params.high_watermark = 64 * 1024;
    params.request_head = "30s";
    std::string yaml = renderConfig(params);
    const std::string plain = "listener: {address: 127.0.0.1, port: 0}\n";
    const std::string tls =
        "listener:\n  address: 127.0.0.1\n  port: 0\n  tls:\n"
        "    cert_file: " +
        dir_ +
        "/cert.pem\n"
        "    key_file: " +
        dir_ + "/key.pem\n" + keys.tls_yaml_extra;
    yaml.replace(yaml.find(plain), plain.size(), tls);
    return yaml;
  }

  void startTls(const TlsKeys& keys = {}) {
    installCert(keys.cert);
    std::string error;
    ferry_ = FerryProcess::start(tlsConfig(keys), &error);
    ASSERT_NE(ferry_, nullptr) << error;
  }

  TlsClientOptions verifying() const {
    TlsClientOptions o;
    o.ca_file = cert("ca.pem");
    return o;
  }

  static bool answered200(const TlsClientResult& r) {
    return r.response.rfind("HTTP/1.1 200", 0) == 0;
  }

  static inline std::string* certs_ = nullptr;
  std::string dir_;
  OkUpstream upstream_;
  std::unique_ptr<FerryProcess> ferry_;
};

TEST_F(ListenerTlsTest, CurlGetsAnAnswerOverTlsWithHttp11Negotiated) {
  // ALPN offering http/1.1 only (the default list leads with h2: see the next test).
  startTls({.tls_yaml_extra = "    alpn: [http/1.1]\n"});
  auto curl = testing::Process::start(
      {.argv = {"/usr/bin/curl", "-sS", "-v", "--cacert", cert("ca.pem"), "-o", "/dev/null", "-w",
                "status=%{http_code}\n",
                "https://localhost:" + std::to_string(ferry_->port()) + "/v1/stream/a"}});
  ASSERT_TRUE(curl.isOk()) << curl.status().message();
  ASSERT_EQ((*curl)->waitExit(std::chrono::seconds(10)), 0) << (*curl)->stderrText();
  EXPECT_NE((*curl)->stdoutText().find("status=200"), std::string::npos);
  EXPECT_NE((*curl)->stderrText().find("ALPN: server accepted http/1.1"), std::string::npos)
      << (*curl)->stderrText();
  EXPECT_EQ(ferry_->stat(kOk), 1);
  EXPECT_GE(upstream_.requests(), 1);

  // The same through the in-test client, and a client offering only h2 is refused (RFC 7301
  // section 3.2: no_application_protocol), counted.
  auto ok = tlsRequest(ferry_->port(), verifying());
  EXPECT_EQ(ok.alpn, "http/1.1");
  EXPECT_TRUE(answered200(ok)) << ok.error;
  SSL_SESSION_free(ok.session);
  TlsClientOptions h2_only = verifying();
  h2_only.alpn = "h2";
  auto refused = tlsRequest(ferry_->port(), h2_only);
  EXPECT_FALSE(refused.handshake_ok);
  EXPECT_TRUE(ferry_->waitForStat(failed("alpn"), 1));
  EXPECT_EQ(ferry_->stat("ferry_downstream_tls_connections_active"), 0);
}

TEST_F(ListenerTlsTest, DefaultAlpnGivesCurlHttp2AndTheInTestClientHttp11) {
  startTls();
  auto curl = testing::Process::start(
      {.argv = {"/usr/bin/curl", "-sS", "-v", "--cacert", cert("ca.pem"), "-o", "/dev/null", "-w",
                "status=%{http_code} version=%{http_version}\n",
                "https://localhost:" + std::to_string(ferry_->port()) + "/v1/stream/a"}});
  ASSERT_TRUE(curl.isOk()) << curl.status().message();
  ASSERT_EQ((*curl)->waitExit(std::chrono::seconds(10)), 0) << (*curl)->stderrText();
  EXPECT_NE((*curl)->stdoutText().find("status=200 version=2"), std::string::npos)
      << (*curl)->stdoutText();
  EXPECT_NE((*curl)->stderrText().find("ALPN: server accepted h2"), std::string::npos)
      << (*curl)->stderrText();
  EXPECT_EQ(ferry_->stat("ferry_downstream_http2_connections_total"), 1);
  // A client offering only http/1.1 still gets it.
  auto ok = tlsRequest(ferry_->port(), verifying());
  EXPECT_EQ(ok.alpn, "http/1.1");
  EXPECT_TRUE(answered200(ok)) << ok.error;
  SSL_SESSION_free(ok.session);
}

// The data path is the plain one: a client that stops reading pauses the upstream read at the
// watermark, and the whole body arrives intact once it reads again.
TEST_F(ListenerTlsTest, ALargeResponseStreamsOverTlsWithBackpressure) {
  FakeUpstream fake;
  startTls({.upstream_port = fake.port()});
  std::string body(8 * 1024 * 1024, '\0');
  for (size_t i = 0; i < body.size(); ++i)
    body[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
  TestThread upstream([&] {
    auto request = fake.waitForRequest();
    if (!request) return;
    request->connection->sendAll(
        "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
        deadlineIn(std::chrono::seconds(30)));
  });
  TlsClientOptions slow = verifying();
  slow.before_read = [&] {
    EXPECT_TRUE(ferry_->waitForStat(R"(ferry_watermark_pauses_total{paused="upstream_read"})", 1));
  };
  auto r = tlsRequest(ferry_->port(), slow);
  SSL_SESSION_free(r.session);
  ASSERT_TRUE(answered200(r)) << r.error;
  const size_t head_end = r.response.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  EXPECT_TRUE(r.response.compare(head_end + 4, std::string::npos, body) == 0)
      << "body of " << r.response.size() - head_end - 4 << " bytes differs";
}

TEST_F(ListenerTlsTest, WrongNameAndExpiredCertificatesFailAVerifyingClient) {
  for (const char* stem : {"wrong-name", "expired"}) {
    SCOPED_TRACE(stem);
    startTls({.cert = stem});
    auto result = tlsRequest(ferry_->port(), verifying());
    EXPECT_FALSE(result.handshake_ok);
    EXPECT_TRUE(result.response.empty());
    // The client's alert (bad certificate / expired) is ferry's failed handshake.
    EXPECT_TRUE(ferry_->waitForStat(failed("peer_alert"), 1));
    EXPECT_EQ(ferry_->stat(kOk), 0);
    EXPECT_EQ(upstream_.requests(), 0);
  }
  // The expiry gauge says when: in the past for the expired certificate.
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const int64_t expiry = ferry_->stat("ferry_downstream_tls_certificate_expiry_timestamp_seconds");
  EXPECT_GT(expiry, now - 3 * 86400);
  EXPECT_LT(expiry, now);
}

TEST_F(ListenerTlsTest, AClientThatStallsMidHandshakeIsClosedAtTheTimeout) {
  startTls({.tls_yaml_extra = "    handshake_timeout: 300ms\n"});
  Socket stalled = Socket::connectTo(ferry_->port());
  ASSERT_TRUE(stalled.valid());
  // The start of a ClientHello record (RFC 8446 section 5.1), then nothing.
  ASSERT_TRUE(stalled.sendAll(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)));
  const auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(stalled.waitForClose(deadlineIn(std::chrono::seconds(5))));
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(250));
  EXPECT_TRUE(ferry_->waitForStat(failed("timeout"), 1));
  EXPECT_EQ(ferry_->stat(kOk), 0);
}

TEST_F(ListenerTlsTest, AReconnectingClientResumesWithItsTicket) {
  startTls();
  auto first = tlsRequest(ferry_->port(), verifying());
  ASSERT_TRUE(answered200(first)) << first.error;
  ASSERT_NE(first.session, nullptr);
  EXPECT_FALSE(first.resumed);
  EXPECT_EQ(SSL_SESSION_is_resumable(first.session), 1);
  TlsClientOptions again = verifying();
  again.resume = first.session;
  auto second = tlsRequest(ferry_->port(), again);
  EXPECT_TRUE(second.resumed);
  EXPECT_TRUE(answered200(second)) << second.error;
  SSL_SESSION_free(first.session);
  SSL_SESSION_free(second.session);
  EXPECT_EQ(ferry_->stat(kOk), 2);
  EXPECT_EQ(ferry_->stat(kResumed), 1);
}

// RFC 8446 appendix C.4: a client should not reuse a ticket, and OpenSSL clients (wrk, curl)
// use a TLS 1.3 ticket once. A resumed connection must therefore bring a fresh ticket, or every
// other reconnect is a full handshake (what bench/passthrough's tls-hs scenario showed).
TEST_F(ListenerTlsTest, AResumedConnectionGetsAFreshTicketSoEveryReconnectResumes) {
  startTls();
  auto first = tlsRequest(ferry_->port(), verifying());
  ASSERT_TRUE(answered200(first)) << first.error;
  ASSERT_NE(first.session, nullptr);
  TlsClientOptions again = verifying();
  again.resume = first.session;
  auto second = tlsRequest(ferry_->port(), again);
  EXPECT_TRUE(second.resumed);
  EXPECT_TRUE(answered200(second)) << second.error;
  ASSERT_NE(second.session, nullptr) << "no ticket on the resumed connection";
  TlsClientOptions third_options = verifying();
  third_options.resume = second.session;
  auto third = tlsRequest(ferry_->port(), third_options);
  EXPECT_TRUE(third.resumed);
  EXPECT_TRUE(answered200(third)) << third.error;
  SSL_SESSION_free(first.session);
  SSL_SESSION_free(second.session);
  if (third.session != nullptr) SSL_SESSION_free(third.session);
  EXPECT_EQ(ferry_->stat(kOk), 3);
  EXPECT_EQ(ferry_->stat(kResumed), 2);
}

// ferry picks the suite (server preference), from its own order: AES-128-GCM first by default,
// even for a client (every OpenSSL one: wrk, curl) that lists AES-256-GCM-SHA384 first.
TEST_F(ListenerTlsTest, TheListenerPicksTheCipherSuiteInItsOwnOrder) {
  startTls();
  TlsClientOptions aes256_first = verifying();
  aes256_first.cipher_suites = "TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256";
  auto picked = tlsRequest(ferry_->port(), aes256_first);
  EXPECT_TRUE(answered200(picked)) << picked.error;
  EXPECT_EQ(picked.cipher, "TLS_AES_128_GCM_SHA256");
  if (picked.session != nullptr) SSL_SESSION_free(picked.session);
  // A client without AES-128-GCM gets the next one ferry offers.
  TlsClientOptions no_aes128 = verifying();
  no_aes128.cipher_suites = "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384";
  picked = tlsRequest(ferry_->port(), no_aes128);
  EXPECT_TRUE(answered200(picked)) << picked.error;
  EXPECT_EQ(picked.cipher, "TLS_AES_256_GCM_SHA384");
  if (picked.session != nullptr) SSL_SESSION_free(picked.session);
}

TEST_F(ListenerTlsTest, CipherSuitesAndTls12CiphersAreTheOperatorsToChoose) {
  startTls({.tls_yaml_extra =
                "    cipher_suites: TLS_CHACHA20_POLY1305_SHA256\n"
                "    ciphers: ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384\n"});
  auto tls13 = tlsRequest(ferry_->port(), verifying());
  EXPECT_TRUE(answered200(tls13)) << tls13.error;
  EXPECT_EQ(tls13.cipher, "TLS_CHACHA20_POLY1305_SHA256");
  if (tls13.session != nullptr) SSL_SESSION_free(tls13.session);
  TlsClientOptions only_aes128 = verifying();
  only_aes128.cipher_suites = "TLS_AES_128_GCM_SHA256";
  auto refused = tlsRequest(ferry_->port(), only_aes128);
  EXPECT_FALSE(refused.handshake_ok);
  // TLS 1.2: the client's first choice (AES-128) is not in ferry's list.
  TlsClientOptions tls12 = verifying();
  tls12.max_version = TLS1_2_VERSION;
  tls12.ciphers =
      "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
      "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384";
  auto picked12 = tlsRequest(ferry_->port(), tls12);
  EXPECT_TRUE(answered200(picked12)) << picked12.error;
  EXPECT_NE(picked12.cipher.find("AES256-GCM-SHA384"), std::string::npos) << picked12.cipher;
  if (picked12.session != nullptr) SSL_SESSION_free(picked12.session);
  // A TLS 1.2 client offering only ciphers outside ferry's list (all in OpenSSL's default) is
  // refused: the list is applied, not just validated.
  TlsClientOptions outside12 = tls12;
  outside12.ciphers =
      "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
      "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
  auto refused12 = tlsRequest(ferry_->port(), outside12);
  EXPECT_FALSE(refused12.handshake_ok) << refused12.cipher;
}

TEST_F(ListenerTlsTest, RequiredClientCertificatesRefuseStrangersAndLogTheIdentity) {
  const std::string log = writeTempFile("", ".log");
  startTls({.tls_yaml_extra =
                "    client_ca_file: " + cert("client-ca.pem") + "\n    client_cert: require\n",
            .access_log = log});
  auto anonymous = tlsRequest(ferry_->port(), verifying());
  // TLS 1.3: the client's handshake completes before ferry checked its certificate (RFC 8446
  // section 4.4.2.4); the refusal arrives instead of a response.
  EXPECT_FALSE(answered200(anonymous));
  EXPECT_TRUE(ferry_->waitForStat(failed("no_client_cert"), 1));
  TlsClientOptions stranger = verifying();
  stranger.cert_file = cert("stranger.pem");
  stranger.key_file = cert("stranger.key");
  EXPECT_FALSE(answered200(tlsRequest(ferry_->port(), stranger)));
  EXPECT_TRUE(ferry_->waitForStat(failed("bad_client_cert"), 1));
  EXPECT_EQ(upstream_.requests(), 0);

  TlsClientOptions member = verifying();
  member.cert_file = cert("client.pem");
  member.key_file = cert("client.key");
  auto ok = tlsRequest(ferry_->port(), member);
  EXPECT_TRUE(answered200(ok)) << ok.error;
  SSL_SESSION_free(ok.session);
  SSL_SESSION_free(anonymous.session);
  // The access log is JSON: the identity is the "peer" field.
  const std::string line = R"("peer":"CN=inst-1;DNS:inst-1.streams.internal")";
  bool logged = false;
  for (Deadline d = defaultDeadline(); !logged && std::chrono::steady_clock::now() < d;) {
    logged = readFile(log).find(line) != std::string::npos;
    if (!logged) std::this_thread::yield();
  }
  EXPECT_TRUE(logged) << readFile(log);
}

TEST_F(ListenerTlsTest, RotationUnderLoadNeverFailsARequestAndNewConnectionsSeeTheNewCert) {
  startTls();
  std::atomic<bool> stop{false};
  std::atomic<int> done{0};
  std::atomic<int> failures{0};
  std::string first_failure;
  std::thread load([&] {
    // One handshake per request: every request meets whatever certificate is current.
    while (!stop) {
      auto r = tlsRequest(ferry_->port(), verifying());
      SSL_SESSION_free(r.session);
      if (!answered200(r)) {
        if (failures++ == 0) first_failure = r.error + " " + r.response;
      }
      ++done;
    }
  });
  auto waitDone = [&](int at_least) {
    for (Deadline d = defaultDeadline(); std::chrono::steady_clock::now() < d;) {
      if (done.load() >= at_least) return true;
      std::this_thread::yield();
    }
    return false;
  };
  EXPECT_TRUE(waitDone(20));
  installCert("rotated");
  ferry_->signal(SIGHUP);
  EXPECT_TRUE(ferry_->waitForStat("ferry_tls_reloads_total", 1));
  const int at_reload = done.load();
  EXPECT_TRUE(waitDone(at_reload + 20));
  stop = true;
  load.join();
  EXPECT_EQ(failures.load(), 0) << first_failure;
  auto after = tlsRequest(ferry_->port(), verifying());
  EXPECT_EQ(after.server_cn, "ferry-1-rotated");
  EXPECT_TRUE(answered200(after));
  SSL_SESSION_free(after.session);
  EXPECT_EQ(ferry_->stat("ferry_tls_reload_failures_total"), 0);
}

TEST_F(ListenerTlsTest, ABadFileOnReloadKeepsTheLastGoodCertificateAndCounts) {
  startTls();
  ASSERT_TRUE(testing::writeFile(dir_ + "/cert.pem", "not a certificate\n").isOk());
  ferry_->signal(SIGHUP);
  EXPECT_TRUE(ferry_->waitForStat("ferry_tls_reload_failures_total", 1));
  auto r = tlsRequest(ferry_->port(), verifying());
  EXPECT_EQ(r.server_cn, "ferry-1");
  EXPECT_TRUE(answered200(r)) << r.error;
  SSL_SESSION_free(r.session);
  EXPECT_EQ(ferry_->stat("ferry_tls_reloads_total"), 0);
}

TEST_F(ListenerTlsTest, PlainHttpOnTheTlsPortGetsA400InCleartextAndIsCounted) {
  startTls();
  Socket plain = Socket::connectTo(ferry_->port());
  ASSERT_TRUE(plain.sendAll("GET /v1/stream/a HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto answer = plain.readToEof(defaultDeadline());
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << *answer;
  EXPECT_NE(answer->find("tls_required"), std::string::npos);
  EXPECT_EQ(
      ferry_->stat(R"(ferry_downstream_protocol_mismatch_total{received="http_on_tls_port"})"), 1);
  EXPECT_EQ(upstream_.requests(), 0);
}

TEST_F(ListenerTlsTest, ATlsClientOnAPlainPortIsClosedAndCounted) {
  FerryConfigParams params;
  params.upstream_port = upstream_.port();
  std::string error;
  ferry_ = FerryProcess::start(renderConfig(params), &error);
  ASSERT_NE(ferry_, nullptr) << error;
  auto r = tlsRequest(ferry_->port(), verifying());
  EXPECT_FALSE(r.handshake_ok);
  EXPECT_TRUE(ferry_->waitForStat(
      R"(ferry_downstream_protocol_mismatch_total{received="tls_on_plain_port"})", 1));
  EXPECT_EQ(ferry_->stat(R"(ferry_parse_errors_total)"), 0);
  EXPECT_EQ(upstream_.requests(), 0);
}

TEST_F(ListenerTlsTest, ValidateLoadsTheFilesAndNamesTheKeyPath) {
  installCert("server");
  auto check = [&](const std::string& extra, const std::string& expected) {
    std::string yaml = tlsConfig({.tls_yaml_extra = extra});
    auto result = runFerry({"--validate", "--config", writeTempFile(yaml)});
    EXPECT_NE(result.out.find(expected), std::string::npos) << result.out;
    return result.exit_code;
  };
  EXPECT_EQ(check("", "OK"), 0);
  EXPECT_EQ(check("    alpn: [http/1.1, spdy/3]\n", "listener.tls.alpn[1]: unsupported protocol"),
            1);
  EXPECT_EQ(check("    alpn: [http/1.1, h2]\n", "OK"), 0);
  EXPECT_EQ(check("    min_version: \"1.1\"\n", "listener.tls.min_version:"), 1);
  EXPECT_EQ(check("    client_cert: require\n", "listener.tls.client_ca_file: required"), 1);
  EXPECT_EQ(check("    cipher_suites: TLS_AES_128_GCM_SHA256:TLS_NO_SUCH_SUITE\n",
                  "listener.tls.cipher_suites: unknown TLS 1.3 cipher suite \"TLS_NO_SUCH_SUITE\""),
            1);
  EXPECT_EQ(check("    ciphers: NO-SUCH-CIPHER\n", "listener.tls.ciphers: no TLS 1.2 cipher"), 1);
  EXPECT_EQ(check("    cipher_suites: \"\"\n", "listener.tls.cipher_suites: must not be empty"), 1);
  EXPECT_EQ(check("    cipher_suites: TLS_AES_256_GCM_SHA384\n", "OK"), 0);
  EXPECT_EQ(check("    client_ca_file: /nonexistent/ca.pem\n",
                  "listener.tls.client_ca_file: cannot read"),
            1);
  ASSERT_TRUE(testing::writeFile(dir_ + "/key.pem", readFile(cert("rotated.key"))).isOk());
  EXPECT_EQ(check("", "listener.tls.key_file: does not match cert_file"), 1);
}

}  // namespace
}  // namespace ferry::itest
