// The HTTP/2 test client against an HTTP/2 server that is not ferry: nghttpx (nghttp2's own
// proxy) in front of the streams emulator, over h2c with prior knowledge and over TLS (ALPN
// h2). Each feature the forwarding tests lean on is checked here once: a whole exchange,
// concurrent streams on one connection, a streaming (SSE) response read incrementally, a
// request body sent in pieces, raw HTTP/1.1 request bytes run as HTTP/2, RST_STREAM both ways,
// GOAWAY after a connection error. Skipped (not passed) when nghttpx is not installed.
#include "integration/harness/http2_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <ostream>
#include <string>

#include "integration/certs/test_certs.h"
#include "integration/harness/http1_to_http2.h"
#include "integration/harness/loopback.h"
#include "integration/harness/process.h"

namespace ferry::testing {
namespace {

using Ms = std::chrono::milliseconds;
constexpr char kNghttpx[] = "/usr/sbin/nghttpx";
constexpr char kToken[] = "h2-client-test";

enum class Mode { kH2c, kH2Tls };
// GoogleTest prints the parameter with this (found by ADL) in test listings and failures.
void PrintTo(Mode m, std::ostream* os) { *os << (m == Mode::kH2c ? "H2c" : "H2Tls"); }

// A port the kernel just handed out, released for nghttpx to bind (nghttpx takes no port 0);
// start() retries with another one if something took it meanwhile.
uint16_t freePort() {
  uint16_t port = 0;
  const int fd = listenOnLoopback(port);
  if (fd >= 0) ::close(fd);
  return port;
}

class Http2ClientTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    if (access(kNghttpx, X_OK) != 0) GTEST_SKIP() << kNghttpx << " is not installed";
    auto dir = makeTempDir("ferry-h2-client-test");
    ASSERT_TRUE(dir.isOk());
    dir_ = *dir;
    ProcessOptions options;
    options.argv = {EMULATOR_BIN, "--name",          "inst-1", "--members",
                    "inst-1",     "--shards",        "4",      "--host",
                    "127.0.0.1",  "--port",          "0",      "--control-token",
                    kToken,       "--drain-seconds", "0"};
    options.log_dir = dir_;
    auto emulator = Process::start(options);
    ASSERT_TRUE(emulator.isOk()) << emulator.status().message();
    emulator_ = std::move(*emulator);
    auto line = emulator_->waitForLine(R"(listening on 127\.0\.0\.1:(\d+))", Ms(10000));
    ASSERT_TRUE(line.isOk()) << line.status().message();
    emulator_port_ = static_cast<uint16_t>(std::stoi(line->at(1)));

    std::string tls_args;
    if (GetParam() == Mode::kH2Tls) {
      const TestCert ca = makeCa("h2 client test CA");
      ASSERT_TRUE(writeCertFiles(dir_, "ca", ca).isOk());
      LeafOptions leaf;
      leaf.common_name = "nghttpx";
      leaf.ips = {"127.0.0.1"};
      ASSERT_TRUE(writeCertFiles(dir_, "server", makeLeaf(ca, leaf)).isOk());
      tls_ = ClientTls{dir_ + "/ca.pem", "", "", ""};
    }
    for (int attempt = 0; attempt < 5 && port_ == 0; ++attempt) startNghttpx(freePort());
    ASSERT_NE(port_, 0) << "nghttpx did not start";
  }

  void startNghttpx(uint16_t port) {
    std::vector<std::string> argv = {
        kNghttpx,
        "--conf=/dev/null",
        "--single-process",
        "--workers=1",
        "--no-ocsp",
        "--errorlog-file=/dev/stdout",
        "-f127.0.0.1," + std::to_string(port) + (tls_ ? "" : ";no-tls"),
        "-b127.0.0.1," + std::to_string(emulator_port_)};
    if (tls_) {
      argv.push_back(dir_ + "/server.key");
      argv.push_back(dir_ + "/server.pem");
    }
    ProcessOptions options;
    options.argv = argv;
    options.name = "nghttpx";
    options.log_dir = dir_;
    auto p = Process::start(options);
    if (!p.isOk()) return;
    if ((*p)->waitForLine(R"(Listening on 127\.0\.0\.1:)", Ms(10000)).isOk()) {
      nghttpx_ = std::move(*p);
      port_ = port;
    }
  }

  void TearDown() override {
    nghttpx_.reset();
    emulator_.reset();
    if (!dir_.empty()) removeTempDir(dir_);
  }

  void connect(Http2Client& c) {
    c.setTls(tls_);
    ASSERT_TRUE(c.connect(port_).isOk());
  }
  // Creates `stream` at the emulator (through nghttpx).
  void create(Http2Client& c, const std::string& stream) {
    auto id = c.submitRequest("PUT", "/v1/stream/" + stream, {{"content-type", "text/plain"}});
    ASSERT_TRUE(id.isOk()) << id.status().message();
    auto r = c.readResponse(*id);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    ASSERT_EQ(r->status, 201) << r->body;
  }

  std::string dir_;
  std::optional<ClientTls> tls_;
  std::unique_ptr<Process> emulator_;
  std::unique_ptr<Process> nghttpx_;
  uint16_t emulator_port_ = 0;
  uint16_t port_ = 0;
};

INSTANTIATE_TEST_SUITE_P(Modes, Http2ClientTest, ::testing::Values(Mode::kH2c, Mode::kH2Tls),
                         [](const auto& info) {
                           return info.param == Mode::kH2c ? "H2c" : "H2Tls";
                         });

TEST_P(Http2ClientTest, OneRequestAndItsWholeResponse) {
  auto r = http2Request(port_, "PUT", "/v1/stream/one", {{"content-type", "text/plain"}}, "hello",
                        Ms(5000), tls_ ? &*tls_ : nullptr);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_FALSE(r->headerOr("stream-next-offset").empty());
  EXPECT_TRUE(r->complete);

  auto read = http2Request(port_, "GET", "/v1/stream/one?offset=-1", {}, {}, Ms(5000),
                           tls_ ? &*tls_ : nullptr);
  ASSERT_TRUE(read.isOk()) << read.status().message();
  EXPECT_EQ(read->status, 200);
  EXPECT_EQ(read->body, "hello");
  EXPECT_EQ(read->headerOr("content-type"), "text/plain");
}

TEST_P(Http2ClientTest, ConcurrentStreamsOnOneConnectionAreReadInAnyOrder) {
  Http2Client c;
  connect(c);
  create(c, "multi");
  std::vector<int32_t> ids;
  for (int i = 0; i < 3; ++i) {
    auto id = c.submitRequest("POST", "/v1/stream/multi", {{"content-type", "text/plain"}},
                              std::string(1, static_cast<char>('a' + i)));
    ASSERT_TRUE(id.isOk()) << id.status().message();
    ids.push_back(*id);
  }
  EXPECT_EQ(ids[1], ids[0] + 2);  // client streams are odd, in order (RFC 9113 section 5.1.1)
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    auto r = c.readResponse(*it);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->status, 204) << r->body;
  }
  auto id = c.submitRequest("GET", "/v1/stream/multi?offset=-1");
  ASSERT_TRUE(id.isOk());
  auto all = c.readResponse(*id);
  ASSERT_TRUE(all.isOk()) << all.status().message();
  EXPECT_EQ(all->body.size(), 3u);
}

TEST_P(Http2ClientTest, SseResponseIsReadEventByEvent) {
  Http2Client c;
  connect(c);
  create(c, "sse");
  auto feed = c.submitRequest("GET", "/v1/stream/sse?offset=-1&live=sse");
  ASSERT_TRUE(feed.isOk());
  auto head = c.readResponseHead(*feed);
  ASSERT_TRUE(head.isOk()) << head.status().message();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headerOr("content-type"), "text/event-stream");
  auto control = c.readBodyUntil(*feed, "\n\n");
  ASSERT_TRUE(control.isOk()) << control.status().message();
  EXPECT_NE(control->find("event: control"), std::string::npos) << *control;

  // Another stream on the same connection appends while the feed stays open.
  auto append = c.submitRequest("POST", "/v1/stream/sse", {{"content-type", "text/plain"}}, "ev");
  ASSERT_TRUE(append.isOk());
  ASSERT_TRUE(c.readResponse(*append).isOk());
  auto data = c.readBodyUntil(*feed, "\n\n");
  ASSERT_TRUE(data.isOk()) << data.status().message();
  EXPECT_NE(data->find("event: data"), std::string::npos) << *data;
  EXPECT_NE(data->find("data:ZXY="), std::string::npos) << *data;  // "ev", base64
  EXPECT_FALSE(c.stream(*feed).closed);
}

TEST_P(Http2ClientTest, RequestBodySentInPiecesArrivesWhole) {
  Http2Client c;
  connect(c);
  create(c, "pieces");
  auto id = c.submitRequest("POST", "/v1/stream/pieces", {{"content-type", "text/plain"}}, "",
                            /*end_stream=*/false);
  ASSERT_TRUE(id.isOk());
  // More than the default 64 KiB stream window: the client waits for WINDOW_UPDATEs.
  const std::string piece(50000, 'x');
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.sendData(*id, piece, i == 2).isOk());
  auto r = c.readResponse(*id);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  auto read = c.submitRequest("GET", "/v1/stream/pieces?offset=-1");
  ASSERT_TRUE(read.isOk());
  auto all = c.readResponse(*read);
  ASSERT_TRUE(all.isOk()) << all.status().message();
  EXPECT_EQ(all->body.size(), 150000u);
}

TEST_P(Http2ClientTest, RawHttp1RequestsRunAsHttp2Streams) {
  Http2Client c;
  connect(c);
  Http1ToHttp2 raw(c);
  // A create (Content-Length, a Connection header HTTP/2 must not carry), then a chunked append
  // fed in pieces across a chunk boundary.
  ASSERT_TRUE(
      raw.feed("PUT /v1/stream/raw HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n"
               "Content-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc")
          .isOk());
  // Streams are concurrent (no order between them, unlike pipelined HTTP/1.1 requests): the
  // append waits for the create's answer.
  ASSERT_EQ(raw.streams().size(), 1u);
  auto created = c.readResponse(raw.streams()[0]);
  ASSERT_TRUE(created.isOk()) << created.status().message();
  EXPECT_EQ(created->status, 201) << created->body;
  ASSERT_TRUE(raw.feed("POST /v1/stream/raw HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nde")
                  .isOk());
  ASSERT_TRUE(raw.feed("fg\r\n2\r\nhi\r\n0\r\n\r\n").isOk());
  ASSERT_EQ(raw.streams().size(), 2u);
  auto appended = c.readResponse(raw.streams()[1]);
  ASSERT_TRUE(appended.isOk()) << appended.status().message();
  EXPECT_EQ(appended->status, 204) << appended->body;
  auto read = c.submitRequest("GET", "/v1/stream/raw?offset=-1");
  ASSERT_TRUE(read.isOk());
  auto all = c.readResponse(*read);
  ASSERT_TRUE(all.isOk()) << all.status().message();
  EXPECT_EQ(all->body, "abcdefghi");
}

TEST_P(Http2ClientTest, ClientResetsOneStreamAndTheConnectionServesTheNext) {
  Http2Client c;
  connect(c);
  create(c, "lp");
  auto poll = c.submitRequest("GET", "/v1/stream/lp?offset=-1&live=long-poll&timeout=20");
  ASSERT_TRUE(poll.isOk());
  ASSERT_TRUE(c.ping().isOk());  // the server has the request
  ASSERT_TRUE(c.resetStream(*poll).isOk());
  EXPECT_TRUE(c.stream(*poll).closed);
  auto next = c.submitRequest("HEAD", "/v1/stream/lp");
  ASSERT_TRUE(next.isOk());
  auto r = c.readResponse(*next);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(c.stream(*poll).reset_by_peer.has_value());
}

TEST_P(Http2ClientTest, ResponseCutByTheBackendIsAStreamReset) {
  Http2Client c;
  connect(c);
  create(c, "cut");
  auto append = c.submitRequest("POST", "/v1/stream/cut", {{"content-type", "text/plain"}},
                                std::string(1000, 'z'));
  ASSERT_TRUE(append.isOk() && c.readResponse(*append).isOk());
  auto knob = c.submitRequest("POST", "/v1/debug/control",
                              {{"x-control-token", kToken}, {"content-type", "application/json"}},
                              R"({"cut_after_bytes":100})");
  ASSERT_TRUE(knob.isOk());
  auto set = c.readResponse(*knob);
  ASSERT_TRUE(set.isOk() && set->status == 200) << set.status().message();

  auto read = c.submitRequest("GET", "/v1/stream/cut?offset=-1");
  ASSERT_TRUE(read.isOk());
  auto r = c.readResponse(*read);
  ASSERT_FALSE(r.isOk());
  const auto code = c.waitForStreamReset(*read);
  ASSERT_TRUE(code.has_value()) << r.status().message();
  EXPECT_NE(*code, static_cast<uint32_t>(NGHTTP2_NO_ERROR));
  // (Whether nghttpx forwarded the head before the reset depends on how the cut arrives.)
  EXPECT_FALSE(c.stream(*read).response.complete);
  EXPECT_LT(c.stream(*read).response.body.size(), 1000u);
  // Only the stream ended: the connection serves the next request.
  auto next = c.submitRequest("HEAD", "/v1/stream/cut");
  ASSERT_TRUE(next.isOk());
  auto head = c.readResponse(*next);
  ASSERT_TRUE(head.isOk()) << head.status().message();
  EXPECT_FALSE(c.isClosedByPeer(Ms(0)));
}

TEST_P(Http2ClientTest, ConnectionErrorBringsGoawayWithTheLastStream) {
  Http2Client c;
  connect(c);
  create(c, "bye");  // stream 1
  // A PING on a stream is a connection error (RFC 9113 section 6.7): the server answers GOAWAY
  // PROTOCOL_ERROR naming the last stream it processed, then closes.
  const std::string ping_on_stream_1(
      "\x00\x00\x08\x06\x00\x00\x00\x00\x01"
      "12345678",
      17);
  ASSERT_TRUE(c.sendRaw(ping_on_stream_1).isOk());
  ASSERT_TRUE(c.waitForGoaway(Ms(5000)));
  EXPECT_EQ(c.goawayErrorCode(), static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  EXPECT_EQ(c.goawayLastStreamId(), 1);
  EXPECT_TRUE(c.isClosedByPeer(Ms(5000)));
}

}  // namespace
}  // namespace ferry::testing
