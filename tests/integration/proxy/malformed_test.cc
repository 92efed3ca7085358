// One raw-socket test per malformed request (nghttpx style): each gets a 400 (431 for an
// oversized head) with the JSON error envelope, ferry closes the connection, and nothing of it
// reaches the upstream. "Nothing reached the upstream" is shown with a sentinel request sent
// afterwards on a new connection: it must be the first request the upstream ever sees.

#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

class MalformedRequestTest : public ProxyTest {
 protected:
  void SetUp() override {
    FerryConfigParams params;
    params.max_request_header_bytes = 4096;
    startFerry(params);
  }

  void expectRejected(const std::string& bytes, int expected_status) {
    int64_t parse_errors = ferry_->stat("ferry_parse_errors_total");
    Socket client = connectClient();
    ASSERT_TRUE(client.sendAll(bytes));
    auto response = readResponse(client, defaultDeadline());
    ASSERT_TRUE(response) << "no parseable response; got: " << client.buffered();
    EXPECT_EQ(response->status, expected_status);
    EXPECT_EQ(response->header("content-type"), "application/json");
    EXPECT_NE(response->body.find("\"error\""), std::string::npos) << response->body;
    // Every refusal closes, and says so (RFC 9112 §9.6), a body framing error's too.
    EXPECT_EQ(response->header("connection"), "close");
    EXPECT_TRUE(client.waitForClose(defaultDeadline())) << "ferry kept the connection open";
    EXPECT_EQ(ferry_->stat("ferry_parse_errors_total"), parse_errors + 1);

    Socket sentinel = connectClient();
    ASSERT_TRUE(sentinel.sendAll(simpleGet("/sentinel")));
    auto first = upstream_.waitForRequest();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->message.path, "/sentinel")
        << "the malformed request reached the upstream: " << first->message.raw_head;
    ASSERT_TRUE(first->connection->sendAll(okResponse("s")));
    ASSERT_TRUE(readResponse(sentinel, defaultDeadline()));
  }
};

TEST_F(MalformedRequestTest, ContentLengthWithTransferEncoding) {
  expectRejected(
      "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
      "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      400);
}

TEST_F(MalformedRequestTest, TwoDifferingContentLengths) {
  expectRejected(
      "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"
      "hello!",
      400);
}

TEST_F(MalformedRequestTest, BadChunkSize) {
  expectRejected(
      "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "zz\r\nhello\r\n0\r\n\r\n",
      400);
}

// The head was fine and went to a stream; the chunk framing broke after the data (no CRLF).
TEST_F(MalformedRequestTest, ChunkDataWithoutCrlf) {
  expectRejected(
      "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhelloXX0\r\n\r\n",
      400);
}

TEST_F(MalformedRequestTest, ObsFoldInHead) {
  expectRejected("GET /x HTTP/1.1\r\nHost: h\r\nX-A: one\r\n two\r\n\r\n", 400);
}

TEST_F(MalformedRequestTest, NulInHead) {
  expectRejected(std::string("GET /x HTTP/1.1\r\nHost: h\r\nX-A: a\0b\r\n\r\n", 38), 400);
}

TEST_F(MalformedRequestTest, BareCrInHead) {
  expectRejected("GET /x HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n", 400);
}

TEST_F(MalformedRequestTest, HeaderSectionOverLimitGets431) {
  expectRejected("GET /x HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(8192, 'a') + "\r\n\r\n",
                 431);
}

}  // namespace
}  // namespace ferry::itest
