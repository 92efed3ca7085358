#include "proxy/http/http1/client_codec.h"

#include <gtest/gtest.h>

#include "proxy/http/http1/codec_factory.h"
#include "tests/proxy/http/http1/test_fakes.h"

namespace ferry::http::http1 {
namespace {

RequestHeaders request(std::string method, std::string path, std::string authority,
                       std::vector<HeaderField> fields = {}) {
  RequestHeaders h;
  h.method = std::move(method);
  h.path = std::move(path);
  h.authority = std::move(authority);
  for (auto& f : fields) h.headers.add(f.name, f.value);
  return h;
}

// The upstream closes the connection: true when that ended the response (or lost nothing), false
// when the stream `r` heard onStreamReset (a response cut short, or a malformed one).
bool closeEndsResponse(Http1ClientCodec& codec, RecordedResponse& r) {
  codec.onConnectionClosed();
  return r.resets.empty();
}

class ClientCodecTest : public testing::Test {
 protected:
  // Starts a request; the test then feeds the response.
  RequestEncoder& start(RecordedResponse& decoder, const RequestHeaders& headers,
                        bool end_stream = true) {
    RequestEncoder& encoder = codec_->newStream(decoder, decoder);
    encoder.encodeHeaders(headers, end_stream);
    return encoder;
  }
  bool feed(std::string_view bytes) {
    input_.add(bytes);
    return codec_->dispatch(input_);
  }

  Buffer output_;
  Buffer input_;
  std::unique_ptr<Http1ClientCodec> codec_ = createClientCodec(output_);
};

// ---- Request encoding ------------------------------------------------------------------------

TEST_F(ClientCodecTest, GetWithHostFromAuthority) {
  RecordedResponse r;
  EXPECT_EQ(codec_->requestBytesEncoded(), 0u);
  start(r, request("GET", "/a?b", "backend:8080", {{"Accept", "*/*"}}));
  const std::string expected = "GET /a?b HTTP/1.1\r\nhost: backend:8080\r\nAccept: */*\r\n\r\n";
  EXPECT_EQ(output_.toString(), expected);
  EXPECT_EQ(codec_->requestBytesEncoded(), expected.size());
}

TEST_F(ClientCodecTest, ExistingHostWinsAndIsNotDuplicated) {
  RecordedResponse r;
  start(r, request("GET", "/", "ignored", {{"X-A", "1"}, {"Host", "real"}}));
  EXPECT_EQ(output_.toString(), "GET / HTTP/1.1\r\nhost: real\r\nX-A: 1\r\n\r\n");
}

TEST_F(ClientCodecTest, ContentLengthBody) {
  RecordedResponse r;
  RequestEncoder& e = start(r, request("POST", "/p", "h", {{"Content-Length", "5"}}), false);
  Buffer body = bufferOf("hello");
  e.encodeData(body, true);
  EXPECT_TRUE(body.empty());
  const std::string expected = "POST /p HTTP/1.1\r\nhost: h\r\nContent-Length: 5\r\n\r\nhello";
  EXPECT_EQ(output_.toString(), expected);
  EXPECT_EQ(codec_->requestBytesEncoded(), expected.size());
}

TEST_F(ClientCodecTest, ChunkedBodyWhenLengthUnknown) {
  RecordedResponse r;
  RequestEncoder& e = start(r, request("POST", "/p", "h"), false);
  Buffer body = bufferOf("abc");
  e.encodeData(body, false);
  Buffer last;
  e.encodeData(last, true);
  const std::string expected =
      "POST /p HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
  EXPECT_EQ(output_.toString(), expected);
  EXPECT_EQ(codec_->requestBytesEncoded(), expected.size());
}

TEST_F(ClientCodecTest, HopByHopFieldsNotSent) {
  RecordedResponse r;
  start(r, request("GET", "/", "h",
                   {{"Connection", "X-Hop"},
                    {"X-Hop", "1"},
                    {"TE", "trailers"},
                    {"Transfer-Encoding", "chunked"},
                    {"Keep-Alive", "1"},
                    {"Expect", "100-continue"}}));
  EXPECT_EQ(output_.toString(), "GET / HTTP/1.1\r\nhost: h\r\nExpect: 100-continue\r\n\r\n");
}

// ---- Response parsing: one piece and one byte at a time give the same events ----------------

struct ResponseCase {
  const char* name;
  std::string method;
  std::string bytes;
  bool close_after;  // call onConnectionClosed() after the bytes
  std::string expected;
  bool keep_alive;
};

void PrintTo(const ResponseCase& c, std::ostream* os) { *os << c.name; }

class ClientCodecParseTest : public testing::TestWithParam<ResponseCase> {};

std::string parseResponse(const ResponseCase& c, bool byte_at_a_time, bool* keep_alive) {
  Buffer output;
  auto codec = createClientCodec(output);
  RecordedResponse decoder;
  codec->newStream(decoder, decoder).encodeHeaders(request(c.method, "/", "h"), true);
  Buffer input;
  bool ok = true;
  if (byte_at_a_time) {
    for (char ch : c.bytes) {
      input.add(&ch, 1);
      ok = ok && codec->dispatch(input);
    }
  } else {
    input.add(c.bytes);
    ok = codec->dispatch(input);
  }
  if (!ok) return "dispatch failed";
  if (c.close_after && !closeEndsResponse(*codec, decoder)) return "close failed";
  EXPECT_FALSE(decoder.data_after_end);
  *keep_alive = codec->keepAlive();
  return decoder.summary();
}

TEST_P(ClientCodecParseTest, SameEventsWholeAndByteAtATime) {
  bool keep_alive = false;
  EXPECT_EQ(parseResponse(GetParam(), false, &keep_alive), GetParam().expected);
  EXPECT_EQ(keep_alive, GetParam().keep_alive);
  EXPECT_EQ(parseResponse(GetParam(), true, &keep_alive), GetParam().expected);
  EXPECT_EQ(keep_alive, GetParam().keep_alive);
}

INSTANTIATE_TEST_SUITE_P(
    Responses, ClientCodecParseTest,
    testing::Values(
        ResponseCase{
            "ContentLength", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: a\r\n\r\nhello",
            false, "200 OK\nContent-Length: 5\nX-A: a\nend_on_headers=0 body=hello ended=1", true},
        ResponseCase{"Chunked", "GET",
                     "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n",
                     false, "201 Created\nend_on_headers=0 body=abcde ended=1", true},
        ResponseCase{"ZeroLength", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false,
                     "200 OK\nContent-Length: 0\nend_on_headers=1 body= ended=1", true},
        ResponseCase{"NoContentIgnoresLength", "GET",
                     "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", false,
                     "204 No Content\nContent-Length: 5\nend_on_headers=1 body= ended=1", true},
        ResponseCase{"NotModified", "GET",
                     "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", false,
                     "304 Not Modified\nContent-Length: 10\nend_on_headers=1 body= ended=1", true},
        ResponseCase{"HeadWithLength", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
                     false, "200 OK\nContent-Length: 1000\nend_on_headers=1 body= ended=1", true},
        ResponseCase{"HeadWithoutLength", "HEAD", "HTTP/1.1 200 OK\r\n\r\n", false,
                     "200 OK\nend_on_headers=1 body= ended=1", true},
        ResponseCase{"ContinueThenFinal", "POST",
                     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                     false, "1xx 100\n200 OK\nContent-Length: 2\nend_on_headers=0 body=ok ended=1",
                     true},
        ResponseCase{"TwoInformational", "GET",
                     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                     "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                     false,
                     "1xx 100\n1xx 103\n200 OK\nContent-Length: 0\nend_on_headers=1 body= ended=1",
                     true},
        ResponseCase{"CloseDelimited", "GET", "HTTP/1.1 200 OK\r\n\r\nuntil the end", true,
                     "200 OK\nend_on_headers=0 body=until the end ended=1", false},
        ResponseCase{"ConnectionClose", "GET",
                     "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi", false,
                     "200 OK\nContent-Length: 2\nend_on_headers=0 body=hi ended=1", false},
        ResponseCase{"Http10Default", "GET", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi",
                     false, "200 OK\nContent-Length: 2\nend_on_headers=0 body=hi ended=1", false},
        ResponseCase{"Http10KeepAlive", "GET",
                     "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi",
                     false, "200 OK\nContent-Length: 2\nend_on_headers=0 body=hi ended=1", true},
        ResponseCase{"NoReasonPhrase", "GET", "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", false,
                     "200 \nContent-Length: 0\nend_on_headers=1 body= ended=1", true},
        ResponseCase{"HopByHopRemoved", "GET",
                     "HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\n"
                     "Transfer-Encoding: chunked\r\nX-Keep: 2\r\n\r\n0\r\n\r\n",
                     false, "200 OK\nX-Keep: 2\nend_on_headers=0 body= ended=1", true}),
    [](const testing::TestParamInfo<ResponseCase>& info) { return std::string(info.param.name); });

// ---- Specific behaviours ---------------------------------------------------------------------

TEST_F(ClientCodecTest, ContinueThenFinalResponseStartsOnlyAtFinal) {
  RecordedResponse r;
  start(r, request("PUT", "/", "h", {{"Expect", "100-continue"}, {"Content-Length", "1"}}), false);
  ASSERT_TRUE(feed("HTTP/1.1 100 Continue\r\n\r\n"));
  EXPECT_EQ(r.informational, std::vector<int>{100});
  EXPECT_FALSE(codec_->responseStarted());
  EXPECT_EQ(r.headers, nullptr);
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_TRUE(codec_->responseStarted());
  ASSERT_NE(r.headers, nullptr);
  EXPECT_EQ(r.headers->status, 200);
  EXPECT_TRUE(r.ended);
}

TEST_F(ClientCodecTest, CloseDelimitedEndsAtConnectionClose) {
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\n\r\npart"));
  EXPECT_TRUE(codec_->responseStarted());
  EXPECT_FALSE(r.ended);
  ASSERT_TRUE(feed("-two"));
  EXPECT_FALSE(r.ended);
  EXPECT_TRUE(closeEndsResponse(*codec_, r));
  EXPECT_TRUE(r.ended);
  EXPECT_EQ(r.body, "part-two");
  EXPECT_FALSE(codec_->keepAlive());
}

TEST_F(ClientCodecTest, ResponseCutShortIsAnError) {
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));
  EXPECT_FALSE(closeEndsResponse(*codec_, r));
  EXPECT_FALSE(r.ended);
  EXPECT_FALSE(codec_->keepAlive());
}

TEST_F(ClientCodecTest, ChunkedCutShortIsAnError) {
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"));
  EXPECT_FALSE(closeEndsResponse(*codec_, r));
  EXPECT_FALSE(r.ended);
}

TEST_F(ClientCodecTest, NoResponseIsAnError) {
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  EXPECT_FALSE(closeEndsResponse(*codec_, r));
  EXPECT_FALSE(codec_->responseStarted());
}

TEST_F(ClientCodecTest, PartialHeadIsAnError) {
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\nContent-"));
  EXPECT_FALSE(closeEndsResponse(*codec_, r));
}

TEST_F(ClientCodecTest, IdleCloseLosesNothing) {
  RecordedResponse none;
  EXPECT_TRUE(closeEndsResponse(*codec_, none));
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_TRUE(closeEndsResponse(*codec_, r));
  EXPECT_FALSE(codec_->keepAlive());
}

TEST_F(ClientCodecTest, HeadResponseThenReuse) {
  RecordedResponse head;
  start(head, request("HEAD", "/", "h"));
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"));
  EXPECT_TRUE(head.ended);
  EXPECT_TRUE(head.headers_end_stream);
  EXPECT_EQ(head.body, "");
  EXPECT_TRUE(codec_->keepAlive());

  // The next response's bytes must not be taken as the HEAD response's 5-byte body.
  output_.clear();
  RecordedResponse get;
  start(get, request("GET", "/2", "h"));
  EXPECT_EQ(codec_->requestBytesEncoded(), output_.length());
  EXPECT_FALSE(codec_->responseStarted());
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"));
  EXPECT_EQ(get.body, "hello");
  EXPECT_TRUE(get.ended);
  EXPECT_TRUE(codec_->keepAlive());
}

TEST_F(ClientCodecTest, ReuseForSecondRequest) {
  RecordedResponse first;
  start(first, request("GET", "/1", "h"));
  uint64_t first_bytes = codec_->requestBytesEncoded();
  EXPECT_GT(first_bytes, 0u);
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"));
  ASSERT_TRUE(first.ended);
  ASSERT_TRUE(codec_->keepAlive());

  RecordedResponse second;
  RequestEncoder& e = codec_->newStream(second, second);
  EXPECT_EQ(codec_->requestBytesEncoded(), 0u);
  EXPECT_FALSE(codec_->responseStarted());
  e.encodeHeaders(request("POST", "/2", "h", {{"Content-Length", "1"}}), false);
  Buffer body = bufferOf("z");
  e.encodeData(body, true);
  EXPECT_EQ(codec_->requestBytesEncoded(), output_.length() - first_bytes);
  ASSERT_TRUE(feed("HTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\nn"));
  ASSERT_NE(second.headers, nullptr);
  EXPECT_EQ(second.headers->status, 404);
  EXPECT_EQ(second.body, "n");
  EXPECT_TRUE(second.ended);
  EXPECT_EQ(first.body, "a");  // the first decoder heard nothing more
}

TEST_F(ClientCodecTest, NextRequestStartedFromEndStreamCallback) {
  RecordedResponse second;
  RecordedResponse first;
  first.on_end = [&] {
    EXPECT_TRUE(codec_->keepAlive());
    codec_->newStream(second, second).encodeHeaders(request("GET", "/2", "h"), true);
  };
  start(first, request("GET", "/1", "h"));
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_TRUE(first.ended);
  EXPECT_EQ(second.headers, nullptr);
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"));
  EXPECT_EQ(second.body, "x");
  EXPECT_TRUE(second.ended);
}

TEST_F(ClientCodecTest, EarlyResponseWhileRequestBodyUnsentPreventsReuse) {
  RecordedResponse r;
  start(r, request("POST", "/", "h", {{"Content-Length", "100"}}), false);
  ASSERT_TRUE(feed("HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_TRUE(r.ended);
  EXPECT_FALSE(codec_->keepAlive());
}

// ---- Stream events (ClientStreamCallbacks, as the HTTP/2 client codec raises them) ----------

TEST_F(ClientCodecTest, RequestSentOnceWhenItsEndIsEncoded) {
  RecordedResponse no_body;
  start(no_body, request("GET", "/", "h"));
  EXPECT_EQ(no_body.requests_sent, 1);
  ASSERT_TRUE(feed("HTTP/1.1 204 No Content\r\n\r\n"));

  RecordedResponse with_body;
  RequestEncoder& e = start(with_body, request("POST", "/", "h", {{"Content-Length", "2"}}), false);
  EXPECT_EQ(with_body.requests_sent, 0);
  Buffer part = bufferOf("a");
  e.encodeData(part, false);
  EXPECT_EQ(with_body.requests_sent, 0);
  Buffer last = bufferOf("b");
  e.encodeData(last, true);
  EXPECT_EQ(with_body.requests_sent, 1);
  EXPECT_EQ(no_body.requests_sent, 1);
}

TEST_F(ClientCodecTest, MalformedResponseResetsTheStreamAsProtocolErrorAtTheClose) {
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  EXPECT_FALSE(feed("HTTP/1.1 20 OK\r\n\r\n"));
  EXPECT_TRUE(r.resets.empty());  // the connection closes first (the pool hears that)
  codec_->onConnectionClosed();
  EXPECT_EQ(r.resets, std::vector<ClientResetReason>{ClientResetReason::ProtocolError});
  codec_->onConnectionClosed();
  EXPECT_EQ(r.resets.size(), 1u);  // once
}

TEST_F(ClientCodecTest, CutShortResponseResetsTheStreamAsConnectionLost) {
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));
  codec_->onConnectionClosed();
  EXPECT_EQ(r.resets, std::vector<ClientResetReason>{ClientResetReason::ConnectionLost});
}

TEST_F(ClientCodecTest, ConnectionLostEndsNoResponseEvenCloseDelimited) {
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  ASSERT_TRUE(feed("HTTP/1.1 200 OK\r\n\r\npart"));
  codec_->onConnectionLost();
  EXPECT_EQ(r.resets, std::vector<ClientResetReason>{ClientResetReason::ConnectionLost});
  EXPECT_FALSE(r.ended);
  EXPECT_FALSE(codec_->keepAlive());
}

TEST_F(ClientCodecTest, WatermarksReachTheStreamUntilItLetsGo) {
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  codec_->onAboveWriteBufferHighWatermark();
  codec_->onBelowWriteBufferLowWatermark();
  EXPECT_EQ(r.above_high, 1);
  EXPECT_EQ(r.below_low, 1);
  codec_->detachStream();
  codec_->onAboveWriteBufferHighWatermark();
  codec_->onConnectionClosed();
  EXPECT_EQ(r.above_high, 1);
  EXPECT_TRUE(r.resets.empty());  // let go: not told of the lost response
}

TEST_F(ClientCodecTest, ResponseWithoutRequestIsAnError) {
  EXPECT_FALSE(feed("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
}

TEST_F(ClientCodecTest, ExtraBytesAfterResponseAreAnError) {
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  EXPECT_FALSE(feed("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 200 OK\r\n"));
  EXPECT_TRUE(r.ended);
  EXPECT_FALSE(codec_->keepAlive());
}

TEST_F(ClientCodecTest, SwitchingProtocolsIsAnError) {
  RecordedResponse r;
  start(r, request("GET", "/", "h"));
  EXPECT_FALSE(feed(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"));
  EXPECT_FALSE(codec_->keepAlive());
}

class ClientCodecBadResponseTest
    : public testing::TestWithParam<std::pair<const char*, std::string>> {};

TEST_P(ClientCodecBadResponseTest, Rejected) {
  for (bool byte_at_a_time : {false, true}) {
    Buffer output;
    auto codec = createClientCodec(output);
    RecordedResponse decoder;
    codec->newStream(decoder, decoder).encodeHeaders(request("GET", "/", "h"), true);
    Buffer input;
    bool ok = true;
    if (byte_at_a_time) {
      for (char ch : GetParam().second) {
        input.add(&ch, 1);
        if (!(ok = codec->dispatch(input))) break;
      }
    } else {
      input.add(GetParam().second);
      ok = codec->dispatch(input);
    }
    EXPECT_FALSE(ok) << (byte_at_a_time ? "byte at a time" : "one piece");
    EXPECT_FALSE(decoder.ended);
    EXPECT_FALSE(codec->keepAlive());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, ClientCodecBadResponseTest,
    testing::Values(
        std::make_pair("BadStatus", std::string("HTTP/1.1 2000 OK\r\n\r\n")),
        std::make_pair("NotHttp", std::string("ICY 200 OK\r\n\r\n")),
        std::make_pair("LengthAndChunked",
                       std::string("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: "
                                   "chunked\r\n\r\n0\r\n\r\n")),
        std::make_pair(
            "DifferingLengths",
            std::string("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab")),
        std::make_pair("BadLength", std::string("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")),
        std::make_pair("ObsFold",
                       std::string("HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n")),
        std::make_pair("BadHeaderName",
                       std::string("HTTP/1.1 200 OK\r\nX A: b\r\nContent-Length: 0\r\n\r\n")),
        std::make_pair("BareCr",
                       std::string("HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n")),
        std::make_pair("BadChunk",
                       std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nq\r\n")),
        std::make_pair("HugeHead",
                       "HTTP/1.1 200 OK\r\nX-Big: " + std::string(100 * 1024, 'x') + "\r\n\r\n")),
    [](const auto& info) { return std::string(info.param.first); });

}  // namespace
}  // namespace ferry::http::http1

namespace ferry::http::http1 {
namespace {

// Parsed response heads are marked wireSafe() so the response encoder writes them without
// checking every field again; the hop-by-hop fields are gone by then.
TEST_F(ClientCodecTest, ParsedResponseHeadIsWireSafe) {
  RecordedResponse r;
  start(r, request("GET", "/", "h", {}));
  ASSERT_TRUE(
      feed("HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n"
           "Content-Length: 0\r\nX-End: e\r\n\r\n"));
  ASSERT_TRUE(r.headers);
  EXPECT_TRUE(r.headers->headers.wireSafe());
  EXPECT_EQ(describeFields(r.headers->headers), "Content-Length: 0\nX-End: e\n");
}

}  // namespace
}  // namespace ferry::http::http1

// ---- Hardening (issue #10) -------------------------------------------------------------------

namespace ferry::http::http1 {
namespace {

struct BadResponse {
  const char* name;
  std::string bytes;
  CodecErrorKind kind;
};
void PrintTo(const BadResponse& c, std::ostream* os) { *os << c.name; }

class ClientCodecRefusedTest : public testing::TestWithParam<BadResponse> {};

TEST_P(ClientCodecRefusedTest, RefusedWholeAndByteAtATimeWithKind) {
  for (bool byte_at_a_time : {false, true}) {
    SCOPED_TRACE(byte_at_a_time ? "byte at a time" : "one piece");
    Buffer output;
    auto codec = createClientCodec(output);
    RecordedResponse decoder;
    codec->newStream(decoder, decoder).encodeHeaders(request("GET", "/", "h"), true);
    Buffer input;
    bool ok = true;
    if (byte_at_a_time) {
      for (char ch : GetParam().bytes) {
        input.add(&ch, 1);
        if (!(ok = codec->dispatch(input))) break;
      }
    } else {
      input.add(GetParam().bytes);
      ok = codec->dispatch(input);
    }
    EXPECT_FALSE(ok);
    EXPECT_EQ(codec->errorKind(), GetParam().kind);
    EXPECT_FALSE(decoder.ended);
    EXPECT_EQ(decoder.body.find("XX"), std::string::npos) << decoder.body;
    EXPECT_FALSE(codec->keepAlive());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Issue10, ClientCodecRefusedTest,
    testing::Values(
        // RFC 9110 §15: only 1xx..5xx mean anything.
        BadResponse{"StatusTwoDigits", "HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n",
                    CodecErrorKind::InvalidStatus},
        BadResponse{"Status600", "HTTP/1.1 600 X\r\nContent-Length: 0\r\n\r\n",
                    CodecErrorKind::InvalidStatus},
        BadResponse{"Status099", "HTTP/1.1 099 X\r\nContent-Length: 0\r\n\r\n",
                    CodecErrorKind::InvalidStatus},
        // RFC 9112 §7.1: chunk data ends with CRLF, as in requests.
        BadResponse{"ChunkDataNotFollowedByCrlf",
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
                    CodecErrorKind::BodyFraming},
        BadResponse{"ChunkDataThenCrX",
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\rX0\r\n\r\n",
                    CodecErrorKind::BodyFraming},
        BadResponse{"ChunkLineTooLong",
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;" +
                        std::string(2000, 'e') + "\r\nhello\r\n0\r\n\r\n",
                    CodecErrorKind::ChunkLineTooLong}),
    [](const testing::TestParamInfo<BadResponse>& info) { return std::string(info.param.name); });

TEST_F(ClientCodecTest, StatusBoundsAccepted) {
  for (const char* line :
       {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 599 X\r\nContent-Length: 0\r\n\r\n"}) {
    RecordedResponse r;
    start(r, request("GET", "/", "h"));
    ASSERT_TRUE(feed(line));
    EXPECT_EQ(r.summary(), "1xx 100\n599 X\nContent-Length: 0\nend_on_headers=1 body= ended=1");
  }
}

}  // namespace
}  // namespace ferry::http::http1
