// Real HTTP/2 clients through ferry, over h2c with prior knowledge (a plain listener: the
// client's preface selects HTTP/2) and over TLS (h2 by ALPN): curl, nghttp, h2load, Node's
// http2 module, and fetch through an undici Agent({allowH2: true}) (TLS only: undici has no
// h2c). ferry fronts the streams emulator. Each client must have spoken HTTP/2 (curl's
// %{http_version}, the frames nghttp prints, h2load's protocol line, the ALPN Node saw) and
// got the emulator's answers. A test skips only when its client is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "integration/certs/test_certs.h"
#include "integration/harness/http_client.h"
#include "integration/harness/process.h"
#include "tests/integration/proxy/support/ferry_process.h"

namespace ferry::itest {
namespace {

using Ms = std::chrono::milliseconds;
using testing::Process;
using testing::ProcessOptions;

enum class Mode { kH2c, kH2Tls };
// GoogleTest prints the parameter with this (found by ADL) in test listings and failures.
void PrintTo(Mode m, std::ostream* os) { *os << (m == Mode::kH2c ? "H2c" : "H2Tls"); }

// `name` found on PATH (execve takes a path), or "".
std::string onPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

struct ClientRun {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

class RealH2ClientsTest : public ::testing::Test {
 protected:
  void start(Mode mode) {
    mode_ = mode;
    auto dir = testing::makeTempDir("ferry-real-h2-clients");
    ASSERT_TRUE(dir.isOk());
    dir_ = *dir;
    ProcessOptions emulator;
    emulator.argv = {EMULATOR_BIN, "--name", "inst-1",    "--members", "inst-1", "--shards",
                     "4",          "--host", "127.0.0.1", "--port",    "0",      "--drain-seconds",
                     "0"};
    emulator.log_dir = dir_;
    auto e = Process::start(emulator);
    ASSERT_TRUE(e.isOk()) << e.status().message();
    emulator_ = std::move(*e);
    auto line = emulator_->waitForLine(R"(listening on 127\.0\.0\.1:(\d+))", Ms(10000));
    ASSERT_TRUE(line.isOk()) << line.status().message();
    emulator_port_ = static_cast<uint16_t>(std::stoi(line->at(1)));

    std::string tls;
    if (mode == Mode::kH2Tls) {
      const testing::TestCert ca = testing::makeCa("real h2 clients CA");
      testing::LeafOptions leaf;
      leaf.common_name = "ferry";
      leaf.ips = {"127.0.0.1"};
      ASSERT_TRUE(testing::writeCertFiles(dir_, "ca", ca).isOk());
      ASSERT_TRUE(testing::writeCertFiles(dir_, "server", testing::makeLeaf(ca, leaf)).isOk());
      ca_file_ = dir_ + "/ca.pem";
      tls = ", tls: {cert_file: " + dir_ + "/server.pem, key_file: " + dir_ + "/server.key}";
    }
    const std::string yaml =
        "instance_name: inst-1\n"
        "listener: {address: 127.0.0.1, port: 0" +
        tls +
        ", http2: {enabled: true}}\n"
        "local_instance: {address: 127.0.0.1, port: " +
        std::to_string(emulator_port_) +
        "}\n"
        "admin: {address: 127.0.0.1, port: 0}\n"
        "workers: 1\n";
    std::string error;
    ferry_ = FerryProcess::start(yaml, &error);
    ASSERT_NE(ferry_, nullptr) << error;
  }

  void TearDown() override {
    ferry_.reset();
    emulator_.reset();
    if (!dir_.empty()) testing::removeTempDir(dir_);
  }

  std::string base() const {
    return std::string(mode_ == Mode::kH2Tls ? "https" : "http") +
           "://127.0.0.1:" + std::to_string(ferry_->port());
  }

  // Runs `argv` (argv[0] a path) to its end; fails the test when it does not end in time.
  ClientRun run(std::vector<std::string> argv, Ms timeout = Ms(60000)) {
    ProcessOptions p;
    p.argv = std::move(argv);
    p.log_dir = dir_;
    p.name = "client-" + std::to_string(++runs_);
    ClientRun r;
    auto proc = Process::start(p);
    EXPECT_TRUE(proc.isOk()) << proc.status().message();
    if (!proc.isOk()) return r;
    auto code = (*proc)->waitExit(timeout);
    EXPECT_TRUE(code.has_value()) << p.argv[0] << " did not finish in time";
    r.exit_code = code.value_or(-1);
    r.out = (*proc)->stdoutText();
    r.err = (*proc)->stderrText();
    return r;
  }

  // Creates `stream` and appends `body` at the emulator directly (the clients then read it
  // through ferry).
  void seed(const std::string& stream, const std::string& body) {
    auto c = testing::httpRequest(emulator_port_, "PUT", "/v1/stream/" + stream,
                                  {{"content-type", "text/plain"}});
    ASSERT_TRUE(c.isOk() && c->status == 201);
    if (body.empty()) return;
    auto a = testing::httpRequest(emulator_port_, "POST", "/v1/stream/" + stream,
                                  {{"content-type", "text/plain"}}, body);
    ASSERT_TRUE(a.isOk() && a->status == 204);
  }
  // The stream's content, read at the emulator directly.
  std::string contentAtEmulator(const std::string& stream) {
    auto r = testing::httpRequest(emulator_port_, "GET", "/v1/stream/" + stream + "?offset=-1");
    EXPECT_TRUE(r.isOk());
    return r.isOk() ? r->body : "";
  }
  // Writes a file in the test's directory; its path.
  std::string file(const std::string& name, const std::string& content) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(testing::writeFile(path, content).isOk());
    return path;
  }

  Mode mode_ = Mode::kH2c;
  std::string dir_;
  std::string ca_file_;
  std::unique_ptr<Process> emulator_;
  uint16_t emulator_port_ = 0;
  std::unique_ptr<FerryProcess> ferry_;
  int runs_ = 0;
};

class RealH2ClientsOverBoth : public RealH2ClientsTest, public ::testing::WithParamInterface<Mode> {
 protected:
  void SetUp() override { start(GetParam()); }
};
INSTANTIATE_TEST_SUITE_P(Modes, RealH2ClientsOverBoth, ::testing::Values(Mode::kH2c, Mode::kH2Tls),
                         [](const auto& info) {
                           return info.param == Mode::kH2c ? "H2c" : "H2Tls";
                         });

TEST_P(RealH2ClientsOverBoth, Curl) {
  const std::string curl = onPath("curl");
  if (curl.empty()) GTEST_SKIP() << "curl is not installed";
  std::vector<std::string> common = {curl, "-sS", "--max-time",
                                     "20", "-w",  "\n%{http_version} %{http_code}"};
  if (mode_ == Mode::kH2Tls) {
    common.insert(common.end(), {"--http2", "--cacert", ca_file_});  // h2 by ALPN, verified
  } else {
    common.push_back("--http2-prior-knowledge");
  }
  auto with = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = common;
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  };
  const std::string url = base() + "/v1/stream/curl";
  ClientRun create = run(with({"-X", "PUT", "-H", "content-type: text/plain", url}));
  EXPECT_EQ(create.exit_code, 0) << create.err;
  EXPECT_EQ(create.out, "\n2 201") << create.err;
  ClientRun append =
      run(with({"-H", "content-type: text/plain", "--data-binary", "from curl", url}));
  EXPECT_EQ(append.exit_code, 0) << append.err;
  EXPECT_EQ(append.out, "\n2 204") << append.err;
  ClientRun read = run(with({url + "?offset=-1"}));
  EXPECT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(read.out, "from curl\n2 200") << read.err;
  EXPECT_EQ(contentAtEmulator("curl"), "from curl");
}

TEST_P(RealH2ClientsOverBoth, Nghttp) {
  const std::string nghttp = onPath("nghttp");
  if (nghttp.empty()) GTEST_SKIP() << "nghttp is not installed (Debian: nghttp2-client)";
  seed("ng", "");
  // -v prints every frame; an http:// URL is h2c with prior knowledge, https:// h2 by ALPN.
  ClientRun append = run({nghttp, "-v", "-t", "20", "-H", "content-type: text/plain", "-d",
                          file("body", "from nghttp"), base() + "/v1/stream/ng"});
  EXPECT_EQ(append.exit_code, 0) << append.out << append.err;
  EXPECT_NE(append.out.find("recv SETTINGS frame"), std::string::npos) << append.out;
  EXPECT_TRUE(std::regex_search(append.out, std::regex(R"(recv \(stream_id=\d+\) :status: 204)")))
      << append.out;
  ClientRun read = run({nghttp, "-v", "-t", "20", base() + "/v1/stream/ng?offset=-1"});
  EXPECT_EQ(read.exit_code, 0) << read.out << read.err;
  EXPECT_TRUE(std::regex_search(read.out, std::regex(R"(recv \(stream_id=\d+\) :status: 200)")))
      << read.out;
  EXPECT_NE(read.out.find("recv DATA frame"), std::string::npos) << read.out;
  EXPECT_NE(read.out.find("from nghttp"), std::string::npos) << read.out;
  EXPECT_NE(read.out.find("; END_STREAM"), std::string::npos) << read.out;
  if (mode_ == Mode::kH2Tls) {
    EXPECT_NE(read.out.find("The negotiated protocol: h2"), std::string::npos) << read.out;
  }
}

TEST_P(RealH2ClientsOverBoth, H2loadAppendsHundredsWithoutAFailure) {
  const std::string h2load = onPath("h2load");
  if (h2load.empty()) GTEST_SKIP() << "h2load is not installed (Debian: nghttp2-client)";
  seed("load", "");
  // 300 appends of one byte: 4 connections, up to 8 concurrent streams each.
  ClientRun r = run({h2load, "-n", "300", "-c", "4", "-m", "8", "-T", "20", "-d", file("one", "x"),
                     "-H", "content-type: text/plain", base() + "/v1/stream/load"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("requests: 300 total, 300 started, 300 done, 300 succeeded, 0 failed, "
                       "0 errored, 0 timeout"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("status codes: 300 2xx, 0 3xx, 0 4xx, 0 5xx"), std::string::npos) << r.out;
  if (mode_ == Mode::kH2Tls) {
    EXPECT_NE(r.out.find("Application protocol: h2"), std::string::npos) << r.out;
  }
  EXPECT_EQ(contentAtEmulator("load"), std::string(300, 'x'));
}

TEST_P(RealH2ClientsOverBoth, NodeHttp2Module) {
  const std::string node = onPath("node");
  if (node.empty()) GTEST_SKIP() << "node is not installed";
  std::vector<std::string> argv = {node, std::string(CLIENTS_DIR) + "/node_http2_client.mjs",
                                   base()};
  if (mode_ == Mode::kH2Tls) argv.push_back(ca_file_);
  ClientRun r = run(argv);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(mode_ == Mode::kH2Tls ? R"("alpn":"h2")" : R"("alpn":"h2c")"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(R"("events":2,"first_event":"event: data")"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"("read":"[abc]{3}")"))) << r.out;
}

// undici negotiates h2 only by ALPN: TLS only.
TEST_F(RealH2ClientsTest, NodeFetchWithAnUndiciAgentAllowingH2) {
  const std::string node = onPath("node");
  if (node.empty()) GTEST_SKIP() << "node is not installed";
  if (onPath("npm").empty()) GTEST_SKIP() << "npm is not installed (needed for undici)";
  start(Mode::kH2Tls);
  ClientRun install =
      run({onPath("bash"), std::string(CLIENTS_DIR) + "/install-node-deps.sh"}, Ms(240000));
  ASSERT_EQ(install.exit_code, 0) << "installing undici: " << install.err;
  ClientRun r = run({node, std::string(CLIENTS_DIR) + "/undici_fetch_h2.mjs", base(), ca_file_});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(R"("protocols":["h2"])"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("read":"onetwo")"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ferry::itest
