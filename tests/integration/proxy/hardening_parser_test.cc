// Issue #10, HTTP/1 parsing findings, black-box: raw bytes from a client socket and a scripted
// upstream, asserting what the client gets, what the upstream saw and what /stats counted.
// "The upstream saw nothing" is shown as in malformed_test.cc: a sentinel request sent
// afterwards on a new connection must be the first complete request the upstream ever reads.

#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

const std::string kSmuggled = "GET /v27/SMUGGLED HTTP/1.1\r\nHost: t.example\r\n\r\n";

class HardeningParserTest : public ProxyTest {
 protected:
  void SetUp() override { startFerry(); }

  // Sends `bytes`, expects `status` with the JSON envelope and a close, and the counters
  // ferry_parse_errors_total and `series` one up each.
  void expectRefused(const std::string& bytes, int status, const std::string& series) {
    const int64_t parse_errors = ferry_->stat("ferry_parse_errors_total");
    const int64_t refused = ferry_->stat(series);
    ASSERT_GE(refused, 0) << series << " is not in /stats";
    Socket client = connectClient();
    ASSERT_TRUE(client.sendAll(bytes));
    expectErrorAndClose(client, status);
    EXPECT_EQ(ferry_->stat("ferry_parse_errors_total"), parse_errors + 1);
    EXPECT_EQ(ferry_->stat(series), refused + 1);
  }

  void expectErrorAndClose(Socket& client, int status) {
    auto response = readResponse(client, defaultDeadline());
    ASSERT_TRUE(response) << "no parseable response; got: " << client.buffered();
    EXPECT_EQ(response->status, status);
    EXPECT_EQ(response->header("content-type"), "application/json");
    EXPECT_NE(response->body.find("\"error\""), std::string::npos) << response->body;
    EXPECT_TRUE(client.waitForClose(defaultDeadline())) << "ferry kept the connection open";
  }

  // The next complete request the upstream reads must be this sentinel.
  void expectSentinelFirst() {
    Socket sentinel = connectClient();
    ASSERT_TRUE(sentinel.sendAll(simpleGet("/sentinel")));
    auto first = upstream_.waitForRequest();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->message.path, "/sentinel")
        << "a refused request reached the upstream: " << first->message.raw_head;
    ASSERT_TRUE(first->connection->sendAll(okResponse("s")));
    ASSERT_TRUE(readResponse(sentinel, defaultDeadline()));
  }

  // One request through ferry; returns what the upstream read. The upstream answers 200.
  std::optional<HttpMessage> forward(const std::string& bytes, int* client_status) {
    Socket client = connectClient();
    if (!client.sendAll(bytes)) return std::nullopt;
    auto seen = upstream_.waitForRequest();
    if (!seen) return std::nullopt;
    if (!seen->connection->sendAll(okResponse("ok"))) return std::nullopt;
    auto response = readResponse(client, defaultDeadline());
    *client_status = response ? response->status : 0;
    return seen->message;
  }
};

// ---- Finding 1: chunk data not followed by CRLF ----------------------------------------------

class ChunkCrlfTest : public HardeningParserTest,
                      public ::testing::WithParamInterface<std::string> {};

// The issue's exact vectors on one connection. The POST's head and first chunk were already
// forwarded when the bad bytes arrive: the upstream keeps a request that never ends (ferry
// closes that connection), and neither the rest of the POST nor the smuggled GET reaches it.
TEST_P(ChunkCrlfTest, RefusedWith400AndCloseNothingSmuggled) {
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(
      "POST /v27 HTTP/1.1\r\nHost: t.example\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello"));
  Socket* upstream = upstream_.waitForConnection();
  ASSERT_NE(upstream, nullptr);
  auto head = readHead(*upstream, defaultDeadline(), true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->path, "/v27");

  const int64_t framing = ferry_->stat(R"(ferry_requests_refused_total{reason="body_framing"})");
  ASSERT_TRUE(client.sendAll(GetParam() + kSmuggled));
  expectErrorAndClose(client, 400);
  EXPECT_EQ(ferry_->stat(R"(ferry_requests_refused_total{reason="body_framing"})"), framing + 1);

  auto rest = upstream->readToEof(defaultDeadline());
  ASSERT_TRUE(rest) << "ferry kept the upstream connection of the refused request open";
  EXPECT_EQ(rest->find("SMUGGLED"), std::string::npos) << *rest;
  EXPECT_EQ(rest->find("abc"), std::string::npos) << *rest;
  EXPECT_EQ(rest->find("0\r\n\r\n"), std::string::npos) << "the POST was ended: " << *rest;
  expectSentinelFirst();
}

INSTANTIATE_TEST_SUITE_P(Issue10, ChunkCrlfTest,
                         ::testing::Values("XX0\r\n\r\n", "\rX0\r\n\r\n", "\nX0\r\n\r\n",
                                           "\r\r0\r\n\r\n", "XX3\r\nabc\r\n0\r\n\r\n"));

// The issue's request as one write: the same answer, and nothing reaches the upstream whole.
TEST_F(HardeningParserTest, ChunkCrlfDesyncInOneWrite) {
  expectRefused(
      "POST /v27 HTTP/1.1\r\nHost: t.example\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhelloXX0\r\n\r\n" +
          kSmuggled,
      400, R"(ferry_requests_refused_total{reason="body_framing"})");
  expectSentinelFirst();
}

// A bare LF ending the trailer section: the same desync by other means.
TEST_F(HardeningParserTest, BareLfEndingTrailersRefused) {
  expectRefused(
      "POST /v27 HTTP/1.1\r\nHost: t.example\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n0\r\n\n" +
          kSmuggled,
      400, R"(ferry_requests_refused_total{reason="body_framing"})");
  expectSentinelFirst();
}

// Same framing from an upstream: a protocol error. The head went out already, so the client's
// response is cut (no last chunk) and nothing after the bad bytes is passed on.
TEST_F(HardeningParserTest, UpstreamChunkWithoutCrlfCutsTheResponse) {
  const std::string series = R"(ferry_upstream_protocol_errors_total{reason="body_framing"})";
  const int64_t before = ferry_->stat(series);
  const int64_t cut = ferry_->stat("ferry_responses_cut_total");
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/r")));
  auto seen = upstream_.waitForRequest();
  ASSERT_TRUE(seen);
  ASSERT_TRUE(seen->connection->sendAll(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX3\r\nabc\r\n0\r\n\r\n"));
  auto all = client.readToEof(defaultDeadline());
  ASSERT_TRUE(all);
  EXPECT_EQ(all->rfind("HTTP/1.1 200", 0), 0u) << *all;
  EXPECT_EQ(all->find("abc"), std::string::npos) << *all;
  EXPECT_EQ(all->find("\r\n0\r\n\r\n"), std::string::npos) << "the response was ended: " << *all;
  EXPECT_TRUE(ferry_->waitForStat(series, before + 1));
  EXPECT_EQ(ferry_->stat("ferry_responses_cut_total"), cut + 1);
}

// ---- Finding 2: HTTP/1.0 without Host, empty Host ----------------------------------------------

TEST_F(HardeningParserTest, Http10WithoutHostGetsTheUpstreamsHost) {
  int status = 0;
  auto seen = forward("GET /v38 HTTP/1.0\r\n\r\n", &status);
  ASSERT_TRUE(seen);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(seen->raw_head.rfind("GET /v38 HTTP/1.1\r\n", 0), 0u) << seen->raw_head;
  EXPECT_EQ(seen->count("host"), 1u) << seen->raw_head;
  EXPECT_EQ(seen->header("host"), "127.0.0.1:" + std::to_string(upstream_.port()));
}

TEST_F(HardeningParserTest, EmptyHostGetsTheUpstreamsHost) {
  int status = 0;
  auto seen = forward("GET /e HTTP/1.1\r\nHost:\r\nX-A: 1\r\n\r\n", &status);
  ASSERT_TRUE(seen);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(seen->count("host"), 1u) << seen->raw_head;
  EXPECT_EQ(seen->header("host"), "127.0.0.1:" + std::to_string(upstream_.port()));
  EXPECT_EQ(seen->header("x-a"), "1");
}

// ---- Finding 8 ---------------------------------------------------------------------------------

TEST_F(HardeningParserTest, MoreThanDefault100HeaderFieldsGets431) {
  std::string head = "GET /h HTTP/1.1\r\nHost: h\r\n";
  for (int i = 0; i < 99; ++i) head += "X-" + std::to_string(i) + ": v\r\n";
  int status = 0;
  auto seen = forward(head + "\r\n", &status);  // 100 fields: passes
  ASSERT_TRUE(seen);
  EXPECT_EQ(status, 200);
  // The 100 sent, and the 3 ferry adds: x-request-id, x-forwarded-for, x-forwarded-proto.
  EXPECT_EQ(seen->headers.size(), 103u);
  expectRefused(head + "X-100: v\r\n\r\n", 431,
                R"(ferry_requests_refused_total{reason="too_many_headers"})");
  expectSentinelFirst();
}

TEST_F(HardeningParserTest, ConfiguredHeaderFieldLimit) {
  FerryConfigParams params;
  params.max_request_headers = 3;
  startFerry(params);
  expectRefused("GET /h HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 431,
                R"(ferry_requests_refused_total{reason="too_many_headers"})");
  expectSentinelFirst();
}

TEST_F(HardeningParserTest, UpstreamStatusOutOfRangeGets502) {
  for (const std::string line : {"HTTP/1.1 20 OK", "HTTP/1.1 600 Nope"}) {
    SCOPED_TRACE(line);
    const std::string series = R"(ferry_upstream_protocol_errors_total{reason="invalid_status"})";
    const int64_t before = ferry_->stat(series);
    Socket client = connectClient();
    ASSERT_TRUE(client.sendAll(simpleGet("/s")));
    auto seen = upstream_.waitForRequest();
    ASSERT_TRUE(seen);
    ASSERT_TRUE(seen->connection->sendAll(line + "\r\nContent-Length: 2\r\n\r\nhi"));
    auto response = readResponse(client, defaultDeadline());
    ASSERT_TRUE(response) << client.buffered();
    EXPECT_EQ(response->status, 502);
    EXPECT_EQ(response->body.find("hi"), std::string::npos);
    EXPECT_EQ(ferry_->stat(series), before + 1);
  }
}

TEST_F(HardeningParserTest, AbsoluteFormUsesTheTargetsAuthority) {
  int status = 0;
  auto seen =
      forward("GET http://a.example:8080/x?q=1 HTTP/1.1\r\nHost: b.example\r\n\r\n", &status);
  ASSERT_TRUE(seen);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(seen->raw_head.rfind("GET /x?q=1 HTTP/1.1\r\n", 0), 0u) << seen->raw_head;
  EXPECT_EQ(seen->count("host"), 1u);
  EXPECT_EQ(seen->header("host"), "a.example:8080");
}

TEST_F(HardeningParserTest, AbsoluteFormWithOtherSchemeRefused) {
  expectRefused("GET ftp://a.example/x HTTP/1.1\r\nHost: a.example\r\n\r\n", 400,
                R"(ferry_requests_refused_total{reason="invalid_target"})");
  expectSentinelFirst();
}

TEST_F(HardeningParserTest, InvalidHostRefused) {
  for (const std::string host : {"a b", "h/x", "u@h", "[::1", "h:8x"}) {
    SCOPED_TRACE(host);
    expectRefused("GET /x HTTP/1.1\r\nHost: " + host + "\r\n\r\n", 400,
                  R"(ferry_requests_refused_total{reason="invalid_host"})");
  }
  expectSentinelFirst();
}

TEST_F(HardeningParserTest, LongChunkExtensionRefused) {
  expectRefused("POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=" +
                    std::string(4096, 'e') + "\r\nhello\r\n0\r\n\r\n",
                400, R"(ferry_requests_refused_total{reason="chunk_line_too_long"})");
}

TEST_F(HardeningParserTest, UnknownMethodGets501) {
  expectRefused("FOO /x HTTP/1.1\r\nHost: h\r\n\r\n", 501,
                R"(ferry_requests_refused_total{reason="unknown_method"})");
  expectSentinelFirst();
}

// llhttp's strict build refuses bytes after a request that said Connection: close; ferry
// never hands them to it (it stops reading), so the request is still answered.
TEST_F(HardeningParserTest, BytesAfterConnectionCloseAreIgnoredNotAnError) {
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll("GET /c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n" +
                             simpleGet("/after")));
  auto seen = upstream_.waitForRequest();
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->message.path, "/c");
  ASSERT_TRUE(seen->connection->sendAll(okResponse("ok")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(client.waitForClose(defaultDeadline()));
  expectSentinelFirst();
}

}  // namespace
}  // namespace ferry::itest
