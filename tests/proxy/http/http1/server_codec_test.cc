#include "proxy/http/http1/server_codec.h"

#include <gtest/gtest.h>

#include "proxy/http/http1/codec_factory.h"
#include "tests/proxy/http/http1/test_fakes.h"

namespace ferry::http::http1 {
namespace {

bool endsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Answers a request with a small complete response.
void respondOk(RecordedRequest& request, std::string body = "ok") {
  ResponseHeaders headers;
  headers.status = 200;
  headers.headers.add("Content-Length", std::to_string(body.size()));
  request.encoder->encodeHeaders(headers, false);
  Buffer data = bufferOf(body);
  request.encoder->encodeData(data, true);
}

class ServerCodecTest : public testing::Test {
 protected:
  void makeCodec() { codec_ = createServerCodec(output_, callbacks_, settings_); }
  void SetUp() override { makeCodec(); }

  bool feed(std::string_view bytes) {
    input_.add(bytes);
    return codec_->dispatch(input_);
  }
  bool feedByteAtATime(std::string_view bytes) {
    for (char c : bytes) {
      input_.add(&c, 1);
      if (!codec_->dispatch(input_)) return false;
    }
    return true;
  }
  RecordedRequest& request(size_t i) { return *callbacks_.requests.at(i); }

  CodecSettings settings_;
  Buffer output_;
  Buffer input_;
  FakeServerCallbacks callbacks_;
  std::unique_ptr<ServerCodec> codec_;
};

// ---- Parsing: one piece and one byte at a time give the same events -------------------------

struct ParseCase {
  const char* name;
  std::string bytes;
  std::vector<std::string> expected;  // RecordedRequest::summary() per request
};

std::vector<std::string> parseAll(std::string_view bytes, bool byte_at_a_time) {
  Buffer output;
  Buffer input;
  FakeServerCallbacks callbacks;
  // Answer each request as soon as it ends, so pipelined requests keep flowing.
  callbacks.on_end = [](RecordedRequest& r) { respondOk(r); };
  auto codec = createServerCodec(output, callbacks, CodecSettings{});
  bool ok = true;
  if (byte_at_a_time) {
    for (char c : bytes) {
      input.add(&c, 1);
      ok = ok && codec->dispatch(input);
    }
  } else {
    input.add(bytes);
    ok = codec->dispatch(input);
  }
  std::vector<std::string> out;
  if (!ok) out.push_back("dispatch failed: " + codec->error().detail);
  for (const auto& r : callbacks.requests) {
    EXPECT_FALSE(r->data_after_end);
    out.push_back(r->summary());
  }
  return out;
}

void PrintTo(const ParseCase& c, std::ostream* os) { *os << c.name; }

class ServerCodecParseTest : public testing::TestWithParam<ParseCase> {};

TEST_P(ServerCodecParseTest, SameEventsWholeAndByteAtATime) {
  const ParseCase& c = GetParam();
  EXPECT_EQ(parseAll(c.bytes, false), c.expected);
  EXPECT_EQ(parseAll(c.bytes, true), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Requests, ServerCodecParseTest,
    testing::Values(
        ParseCase{"Get",
                  "GET /a?b=c HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n",
                  {"GET /a?b=c authority=example.com\nHost: example.com\nAccept: */*\n"
                   "end_on_headers=1 body= ended=1"}},
        ParseCase{"ContentLength",
                  "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world",
                  {"POST /up authority=h\nHost: h\nContent-Length: 11\n"
                   "end_on_headers=0 body=hello world ended=1"}},
        ParseCase{"Chunked",
                  "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
                  {"POST /c authority=h\nHost: h\nend_on_headers=0 body=hello world ended=1"}},
        ParseCase{"ChunkedUppercaseHex",
                  "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: CHUNKED\r\n\r\n"
                  "A\r\n0123456789\r\n0\r\n\r\n",
                  {"PUT / authority=h\nHost: h\nend_on_headers=0 body=0123456789 ended=1"}},
        ParseCase{
            "ZeroContentLength",
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
            {"POST / authority=h\nHost: h\nContent-Length: 0\nend_on_headers=1 body= ended=1"}},
        ParseCase{"Http10WithoutHost",
                  "GET /old HTTP/1.0\r\n\r\n",
                  {"GET /old authority=\nend_on_headers=1 body= ended=1"}},
        ParseCase{"OwsTrimmedEmptyValueKept",
                  "GET / HTTP/1.1\r\nHost:h\r\nX-Empty:\r\nX-Pad: \t padded value \t\r\n\r\n",
                  {"GET / authority=h\nHost: h\nX-Empty: \nX-Pad: padded value\n"
                   "end_on_headers=1 body= ended=1"}},
        ParseCase{
            "ExpectContinueKept",
            "PUT /x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nZ",
            {"PUT /x authority=h\nHost: h\nExpect: 100-continue\nContent-Length: 1\n"
             "end_on_headers=0 body=Z ended=1"}},
        ParseCase{"LeadingEmptyLineIgnored",
                  "\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
                  {"GET / authority=h\nHost: h\nend_on_headers=1 body= ended=1"}},
        ParseCase{
            "Pipelined",
            "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"
            "POST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
            "POST /3 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
            {"GET /1 authority=h\nHost: h\nend_on_headers=1 body= ended=1",
             "POST /2 authority=h\nHost: h\nContent-Length: 3\nend_on_headers=0 body=abc ended=1",
             "POST /3 authority=h\nHost: h\nend_on_headers=0 body=x ended=1"}}),
    [](const testing::TestParamInfo<ParseCase>& info) { return std::string(info.param.name); });

// ---- Bodies ----------------------------------------------------------------------------------

TEST_F(ServerCodecTest, ContentLengthBodyEndsOnLastPiece) {
  ASSERT_TRUE(feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\n\r\nabc"));
  ASSERT_EQ(callbacks_.requests.size(), 1u);
  EXPECT_FALSE(request(0).headers_end_stream);
  EXPECT_EQ(request(0).body, "abc");
  EXPECT_FALSE(request(0).ended);
  ASSERT_TRUE(feed("def"));
  EXPECT_EQ(request(0).body, "abcdef");
  EXPECT_TRUE(request(0).ended);
  EXPECT_EQ(request(0).data_calls, 2);
}

TEST_F(ServerCodecTest, ChunkedLastChunkEndsWithEmptyData) {
  ASSERT_TRUE(feed("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"));
  EXPECT_EQ(request(0).body, "abc");
  EXPECT_FALSE(request(0).ended);
  int calls = request(0).data_calls;
  ASSERT_TRUE(feed("0\r\n\r\n"));
  EXPECT_TRUE(request(0).ended);
  EXPECT_EQ(request(0).data_calls, calls + 1);
  EXPECT_EQ(request(0).body, "abc");
}

// ---- Pipelining ------------------------------------------------------------------------------

TEST_F(ServerCodecTest, SecondPipelinedRequestWaitsForFirstResponse) {
  const std::string second = "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n";
  ASSERT_TRUE(feed("GET /1 HTTP/1.1\r\nHost: h\r\n\r\n" + second));
  ASSERT_EQ(callbacks_.requests.size(), 1u);
  EXPECT_EQ(input_.toString(), second);  // left for later
  EXPECT_TRUE(streamActive(*codec_));
  ASSERT_TRUE(codec_->dispatch(input_));  // still waiting: consumes nothing
  EXPECT_EQ(callbacks_.requests.size(), 1u);
  EXPECT_EQ(input_.length(), second.size());

  respondOk(request(0), "one");
  EXPECT_FALSE(streamActive(*codec_));
  ASSERT_TRUE(codec_->dispatch(input_));
  ASSERT_EQ(callbacks_.requests.size(), 2u);
  EXPECT_EQ(request(1).headers->path, "/2");
  EXPECT_TRUE(input_.empty());
  respondOk(request(1), "two");
  EXPECT_EQ(output_.toString(),
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo");
}

TEST_F(ServerCodecTest, PipelinedAfterChunkedResponse) {
  ASSERT_TRUE(feed("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n"));
  ResponseHeaders headers;
  request(0).encoder->encodeHeaders(headers, false);
  ASSERT_TRUE(codec_->dispatch(input_));
  EXPECT_EQ(callbacks_.requests.size(), 1u);  // response not complete yet
  Buffer data = bufferOf("x");
  request(0).encoder->encodeData(data, true);
  ASSERT_TRUE(codec_->dispatch(input_));
  ASSERT_EQ(callbacks_.requests.size(), 2u);
  EXPECT_FALSE(codec_->wantsClose());
}

TEST_F(ServerCodecTest, PipelinedBytesSplitAcrossDispatches) {
  callbacks_.on_end = [](RecordedRequest& r) { respondOk(r); };
  ASSERT_TRUE(feed("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HT"));
  ASSERT_TRUE(feed("TP/1.1\r\nHo"));
  ASSERT_TRUE(feed("st: h\r\n\r\n"));
  ASSERT_EQ(callbacks_.requests.size(), 2u);
  EXPECT_EQ(request(1).headers->path, "/2");
  EXPECT_EQ(request(1).headers->authority, "h");
}

// ---- Malformed input -------------------------------------------------------------------------

struct BadCase {
  const char* name;
  std::string bytes;
  int status;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class ServerCodecBadRequestTest : public testing::TestWithParam<BadCase> {};

TEST_P(ServerCodecBadRequestTest, RejectedWholeAndByteAtATime) {
  for (bool byte_at_a_time : {false, true}) {
    SCOPED_TRACE(byte_at_a_time ? "byte at a time" : "one piece");
    Buffer output;
    Buffer input;
    FakeServerCallbacks callbacks;
    auto codec = createServerCodec(output, callbacks, CodecSettings{});
    bool ok = true;
    if (byte_at_a_time) {
      for (char c : GetParam().bytes) {
        input.add(&c, 1);
        if (!(ok = codec->dispatch(input))) break;
      }
    } else {
      input.add(GetParam().bytes);
      ok = codec->dispatch(input);
    }
    EXPECT_FALSE(ok);
    EXPECT_EQ(codec->error().http_status, GetParam().status);
    EXPECT_FALSE(codec->error().detail.empty());
    // Nothing of a rejected head reaches a stream.
    EXPECT_TRUE(callbacks.requests.empty());
    // The codec stays failed.
    Buffer more = bufferOf("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_FALSE(codec->dispatch(more));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Framing, ServerCodecBadRequestTest,
    testing::Values(
        BadCase{
            "ContentLengthAndTransferEncoding",
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            400},
        BadCase{
            "TransferEncodingAndContentLength",
            "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
            400},
        BadCase{"DuplicateContentLengthDiffering",
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
                400},
        BadCase{"ContentLengthList",
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 4\r\n\r\nabc", 400},
        BadCase{"ContentLengthNotNumeric",
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3x\r\n\r\nabc", 400},
        BadCase{"ContentLengthNegative", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
                400},
        BadCase{"ContentLengthEmpty", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n",
                400},
        BadCase{"TransferEncodingNotChunked",
                "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\nabc", 400},
        BadCase{"TransferEncodingChunkedNotLast",
                "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\nabc", 400},
        BadCase{"TransferEncodingSplitChunkedNotLast",
                "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
                "gzip\r\n\r\n",
                400},
        BadCase{"TransferEncodingOtherCodingBeforeChunked",
                "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                501},
        BadCase{"TransferEncodingInHttp10",
                "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        BadCase{"ObsFold", "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b\r\n\r\n", 400},
        BadCase{"ObsFoldTab", "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n\tb\r\n\r\n", 400},
        BadCase{"NulInValue", std::string("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\0b\r\n\r\n", 37),
                400},
        BadCase{"NulInTarget", std::string("GET /a\0b HTTP/1.1\r\nHost: h\r\n\r\n", 30), 400},
        BadCase{"BareCrInValue", "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n", 400},
        BadCase{"BareCrInRequestLine", "GET / HTTP/1.1\rHost: h\r\n\r\n", 400},
        BadCase{"BareLf", "GET / HTTP/1.1\nHost: h\n\n", 400},
        BadCase{"SpaceInHeaderName", "GET / HTTP/1.1\r\nHost: h\r\nX A: v\r\n\r\n", 400},
        BadCase{"SpaceBeforeColon", "GET / HTTP/1.1\r\nHost: h\r\nX-A : v\r\n\r\n", 400},
        BadCase{"EmptyHeaderName", "GET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", 400},
        BadCase{"NonTokenHeaderName", "GET / HTTP/1.1\r\nHost: h\r\nX(A): v\r\n\r\n", 400},
        BadCase{"HeaderWithoutColon", "GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400},
        BadCase{"DoubleSpaceInRequestLine", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"TabInRequestLine", "GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"TrailingSpaceInRequestLine", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400},
        BadCase{"LeadingSpaceInRequestLine", " GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"Http09RequestLine", "GET /\r\n\r\n", 400},
        BadCase{"SpaceInTarget", "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"BadMethod", "G@T / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"BadVersion", "GET / HTTP/1.7\r\nHost: h\r\n\r\n", 400},
        BadCase{"NotHttp", "GET / FTP/1.1\r\nHost: h\r\n\r\n", 400},
        BadCase{"Http2Version", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
        BadCase{"MissingHost", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", 400},
        BadCase{"DuplicateHost", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        BadCase{"Connect", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
                501}),
    [](const testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST_F(ServerCodecTest, BadChunkSizeAfterHead) {
  ASSERT_FALSE(
      feed("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n"));
  EXPECT_EQ(codec_->error().http_status, 400);
  ASSERT_EQ(callbacks_.requests.size(), 1u);
  EXPECT_FALSE(request(0).ended);
}

TEST_F(ServerCodecTest, ChunkSizeOverflow) {
  ASSERT_FALSE(
      feed("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
           "fffffffffffffffff\r\n"));
  EXPECT_EQ(codec_->error().http_status, 400);
}

TEST_F(ServerCodecTest, IdenticalDuplicateContentLengthIsRejectedOrFolded) {
  // RFC 9110 §8.6 allows either; whichever is chosen, the body must not be mis-framed.
  bool ok = feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc");
  if (ok) {
    ASSERT_EQ(callbacks_.requests.size(), 1u);
    EXPECT_EQ(request(0).body, "abc");
    EXPECT_EQ(request(0).headers->headers.count("content-length"), 1u);
  } else {
    EXPECT_EQ(codec_->error().http_status, 400);
  }
}

// ---- Head size -------------------------------------------------------------------------------

TEST_F(ServerCodecTest, HeadAtLimitAcceptedOneOverRejectedWith431) {
  const std::string prefix = "GET / HTTP/1.1\r\nHost: h\r\nX-Pad: ";
  const std::string suffix = "\r\n\r\n";
  settings_.max_request_header_bytes = 200;
  std::string at_limit = prefix + std::string(200 - prefix.size() - suffix.size(), 'a') + suffix;
  ASSERT_EQ(at_limit.size(), 200u);

  makeCodec();
  EXPECT_TRUE(feed(at_limit));
  EXPECT_EQ(callbacks_.requests.size(), 1u);

  for (bool byte_at_a_time : {false, true}) {
    callbacks_.requests.clear();
    input_.clear();
    makeCodec();
    std::string over = prefix + std::string(201 - prefix.size() - suffix.size(), 'a') + suffix;
    EXPECT_FALSE(byte_at_a_time ? feedByteAtATime(over) : feed(over));
    EXPECT_EQ(codec_->error().http_status, 431);
    EXPECT_TRUE(callbacks_.requests.empty());
  }
}

TEST_F(ServerCodecTest, EndlessHeadRejectedBeforeItEnds) {
  settings_.max_request_header_bytes = 1024;
  makeCodec();
  ASSERT_TRUE(feed("GET / HTTP/1.1\r\nX-Big: "));
  EXPECT_FALSE(feed(std::string(2000, 'b')));
  EXPECT_EQ(codec_->error().http_status, 431);
}

TEST_F(ServerCodecTest, DefaultLimitIs60KiB) {
  EXPECT_EQ(CodecSettings{}.max_request_header_bytes, 60u * 1024u);
  std::string big =
      "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(61 * 1024, 'x') + "\r\n\r\n";
  EXPECT_FALSE(feed(big));
  EXPECT_EQ(codec_->error().http_status, 431);
}

TEST_F(ServerCodecTest, LimitAppliesPerRequestNotPerConnection) {
  settings_.max_request_header_bytes = 100;
  makeCodec();
  callbacks_.on_end = [](RecordedRequest& r) { respondOk(r); };
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(feed("GET / HTTP/1.1\r\nHost: h\r\nX-Pad: 0123456789\r\n\r\n"));
  EXPECT_EQ(callbacks_.requests.size(), 5u);
}

// ---- Hop-by-hop fields -----------------------------------------------------------------------

TEST_F(ServerCodecTest, HopByHopFieldsRemoved) {
  ASSERT_TRUE(feed(
      "POST /p HTTP/1.1\r\nHost: origin\r\nConnection: keep-alive, X-Hop\r\nConnection: x-other\r\n"
      "Keep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nTE: trailers\r\nTrailer: X-T\r\n"
      "Upgrade: h2c\r\nX-Hop: 1\r\nX-Other: 2\r\nX-Keep: 3\r\nExpect: 100-continue\r\n"
      "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
  ASSERT_EQ(callbacks_.requests.size(), 1u);
  const RequestHeaders& h = *request(0).headers;
  EXPECT_EQ(describeFields(h.headers), "Host: origin\nX-Keep: 3\nExpect: 100-continue\n");
  EXPECT_EQ(h.authority, "origin");
  EXPECT_TRUE(request(0).ended);
}

TEST_F(ServerCodecTest, ContentLengthKeptEvenWhenConnectionNamesIt) {
  ASSERT_TRUE(feed(
      "POST / HTTP/1.1\r\nHost: h\r\nConnection: content-length\r\nContent-Length: 2\r\n\r\nab"));
  EXPECT_EQ(request(0).headers->headers.get("content-length"), "2");
  EXPECT_EQ(request(0).body, "ab");
}

TEST_F(ServerCodecTest, UpgradeRequestTreatedAsPlainRequest) {
  ASSERT_TRUE(
      feed("GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
           "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"));
  ASSERT_EQ(callbacks_.requests.size(), 1u);
  EXPECT_FALSE(request(0).headers->headers.has("upgrade"));
  EXPECT_FALSE(request(0).headers->headers.has("connection"));
  EXPECT_TRUE(request(0).headers_end_stream);
  respondOk(request(0));
  ASSERT_TRUE(codec_->dispatch(input_));
  ASSERT_EQ(callbacks_.requests.size(), 2u);
  EXPECT_EQ(request(1).headers->path, "/next");
}

// ---- Connection state ------------------------------------------------------------------------

TEST_F(ServerCodecTest, RequestHeadInProgress) {
  EXPECT_FALSE(codec_->requestHeadInProgress());
  ASSERT_TRUE(feed("\r\n"));  // an empty line before a request is not a head
  EXPECT_FALSE(codec_->requestHeadInProgress());
  ASSERT_TRUE(feed("GE"));
  EXPECT_TRUE(codec_->requestHeadInProgress());
  ASSERT_TRUE(feed("T / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n"));
  EXPECT_FALSE(codec_->requestHeadInProgress());  // body phase
  ASSERT_TRUE(feed("ab"));
  EXPECT_FALSE(codec_->requestHeadInProgress());
}

TEST_F(ServerCodecTest, StreamActiveUntilResponseComplete) {
  EXPECT_FALSE(streamActive(*codec_));
  ASSERT_TRUE(feed("GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_TRUE(streamActive(*codec_));
  ResponseHeaders headers;
  request(0).encoder->encodeHeaders(headers, false);
  EXPECT_TRUE(streamActive(*codec_));
  Buffer empty;
  request(0).encoder->encodeData(empty, true);
  EXPECT_FALSE(streamActive(*codec_));
}

struct CloseCase {
  const char* name;
  std::string request;
  bool close;
};

void PrintTo(const CloseCase& c, std::ostream* os) { *os << c.name; }

class ServerCodecCloseTest : public testing::TestWithParam<CloseCase> {};

TEST_P(ServerCodecCloseTest, CloseAfterResponse) {
  Buffer output;
  FakeServerCallbacks callbacks;
  auto codec = createServerCodec(output, callbacks, CodecSettings{});
  Buffer input = bufferOf(GetParam().request);
  ASSERT_TRUE(codec->dispatch(input));
  ASSERT_EQ(callbacks.requests.size(), 1u);
  EXPECT_EQ(codec->wantsClose(), GetParam().close);
  respondOk(*callbacks.requests[0]);
  EXPECT_EQ(codec->wantsClose(), GetParam().close);
  EXPECT_EQ(output.toString().find("connection: close") != std::string::npos, GetParam().close);
}

INSTANTIATE_TEST_SUITE_P(
    KeepAlive, ServerCodecCloseTest,
    testing::Values(CloseCase{"Http11Default", "GET / HTTP/1.1\r\nHost: h\r\n\r\n", false},
                    CloseCase{"Http11ConnectionClose",
                              "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", true},
                    CloseCase{"Http10Default", "GET / HTTP/1.0\r\n\r\n", true},
                    CloseCase{"Http10KeepAlive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
                              false}),
    [](const testing::TestParamInfo<CloseCase>& info) { return std::string(info.param.name); });

TEST_F(ServerCodecTest, ConnectionCloseStopsDecodingLaterRequests) {
  callbacks_.on_end = [](RecordedRequest& r) { respondOk(r); };
  ASSERT_TRUE(feed(
      "GET /1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(callbacks_.requests.size(), 1u);
  EXPECT_TRUE(codec_->wantsClose());
  EXPECT_TRUE(feed("GET /3 HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(callbacks_.requests.size(), 1u);
}

// Drain: a response whose head is not written yet says it closes; later requests are not read.
TEST_F(ServerCodecTest, CloseAfterCurrentResponseBeforeTheHeadSaysConnectionClose) {
  ASSERT_TRUE(feed("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_FALSE(codec_->wantsClose());
  codec_->shutdownNotice();
  EXPECT_TRUE(codec_->wantsClose());
  respondOk(request(0));
  EXPECT_NE(output_.toString().find("connection: close\r\n"), std::string::npos)
      << output_.toString();
  ASSERT_TRUE(feed(""));
  EXPECT_EQ(callbacks_.requests.size(), 1u);
}

// Drain after the head went out: it cannot change, but the connection still closes after it.
// A chunked body can still end early (its last chunk); a Content-Length one cannot.
TEST_F(ServerCodecTest, CloseAfterCurrentResponseAfterTheHeadAndCanEndEarly) {
  ASSERT_TRUE(feed("GET /feed HTTP/1.1\r\nHost: h\r\n\r\n"));
  ResponseHeaders chunked;
  chunked.status = 200;
  request(0).encoder->encodeHeaders(chunked, false);
  EXPECT_TRUE(request(0).encoder->canEndEarly());
  codec_->shutdownNotice();
  EXPECT_TRUE(codec_->wantsClose());
  EXPECT_EQ(output_.toString().find("connection: close"), std::string::npos);
  Buffer empty;
  request(0).encoder->encodeData(empty, true);
  EXPECT_TRUE(endsWith(output_.toString(), "\r\n0\r\n\r\n")) << output_.toString();
  EXPECT_FALSE(request(0).encoder->canEndEarly());  // complete

  ASSERT_TRUE(feed("GET /file HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(callbacks_.requests.size(), 1u) << "no request is read after a drain";
}

TEST_F(ServerCodecTest, ContentLengthResponseCannotEndEarly) {
  ASSERT_TRUE(feed("GET /file HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_FALSE(request(0).encoder->canEndEarly());  // no head yet
  ResponseHeaders sized;
  sized.status = 200;
  sized.headers.add("content-length", "10");
  request(0).encoder->encodeHeaders(sized, false);
  EXPECT_FALSE(request(0).encoder->canEndEarly());
}

TEST_F(ServerCodecTest, ResponseBeforeRequestBodyCompleteClosesAndStopsDecoding) {
  ASSERT_TRUE(feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc"));
  EXPECT_FALSE(codec_->wantsClose());
  ResponseHeaders headers;
  headers.status = 413;
  request(0).encoder->encodeHeaders(headers, true);
  EXPECT_TRUE(codec_->wantsClose());
  EXPECT_FALSE(streamActive(*codec_));
  EXPECT_NE(output_.toString().find("connection: close\r\n"), std::string::npos);
  int calls = request(0).data_calls;
  ASSERT_TRUE(feed("defghijGET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(request(0).data_calls, calls);  // nobody hears the rest
  EXPECT_EQ(callbacks_.requests.size(), 1u);
  EXPECT_TRUE(input_.empty());
}

TEST_F(ServerCodecTest, LocalReplyFromHeadersCallbackBeforeBody) {
  callbacks_.on_end = nullptr;
  ASSERT_TRUE(feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n"));
  ResponseHeaders headers;
  headers.status = 403;
  request(0).encoder->encodeHeaders(headers, true);
  ASSERT_TRUE(feed("abc"));
  EXPECT_EQ(request(0).data_calls, 0);
  EXPECT_TRUE(codec_->wantsClose());
}

TEST_F(ServerCodecTest, SynchronousResponseLetsNextRequestProceedInSameDispatch) {
  callbacks_.on_end = [](RecordedRequest& r) { respondOk(r); };
  ASSERT_TRUE(feed("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_EQ(callbacks_.requests.size(), 2u);
  EXPECT_TRUE(input_.empty());
  EXPECT_FALSE(streamActive(*codec_));
}

}  // namespace
}  // namespace ferry::http::http1

namespace ferry::http::http1 {
namespace {

// Parsed request heads are marked wireSafe() so the request encoder writes them without
// checking every field again; the hop-by-hop fields are gone by then.
TEST_F(ServerCodecTest, ParsedRequestHeadIsWireSafe) {
  ASSERT_TRUE(
      feed("GET / HTTP/1.1\r\nHost: h\r\nConnection: X-Hop\r\nX-Hop: 1\r\nX-End: e\r\n\r\n"));
  ASSERT_EQ(callbacks_.requests.size(), 1u);
  const RequestHeaders& headers = *request(0).headers;
  EXPECT_TRUE(headers.headers.wireSafe());
  EXPECT_EQ(describeFields(headers.headers), "Host: h\nX-End: e\n");
}

}  // namespace
}  // namespace ferry::http::http1

// ---- Hardening (issue #10) -------------------------------------------------------------------

namespace ferry::http::http1 {
namespace {

struct Fed {
  bool ok = true;
  CodecError error;
  std::vector<std::string> requests;  // summary() of each request that reached a stream
};

// Feeds `bytes` whole or one byte at a time into a fresh codec that answers each request as
// soon as it ends.
Fed feedFresh(std::string_view bytes, bool byte_at_a_time, CodecSettings settings = {}) {
  Buffer output;
  Buffer input;
  FakeServerCallbacks callbacks;
  callbacks.on_end = [](RecordedRequest& r) { respondOk(r); };
  auto codec = createServerCodec(output, callbacks, settings);
  Fed fed;
  if (byte_at_a_time) {
    for (char c : bytes) {
      input.add(&c, 1);
      if (!(fed.ok = codec->dispatch(input))) break;
    }
  } else {
    input.add(bytes);
    fed.ok = codec->dispatch(input);
  }
  if (!fed.ok) fed.error = codec->error();
  for (const auto& r : callbacks.requests) fed.requests.push_back(r->summary());
  return fed;
}

// Finding 1: the two bytes after chunk data must be CRLF (RFC 9112 §7.1). llhttp's default
// build skipped them unchecked, so "5\r\nhelloXX0\r\n\r\nGET /SMUGGLED..." was one request with
// body "hello" followed by a second request.
struct ChunkCase {
  const char* name;
  std::string after_data;  // what follows the 5 bytes of chunk data
};
void PrintTo(const ChunkCase& c, std::ostream* os) { *os << c.name; }

class ServerCodecChunkCrlfTest : public testing::TestWithParam<ChunkCase> {};

TEST_P(ServerCodecChunkCrlfTest, RefusedWholeAndByteAtATime) {
  const std::string bytes =
      "POST /v27 HTTP/1.1\r\nHost: t.example\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello" +
      GetParam().after_data + "GET /v27/SMUGGLED HTTP/1.1\r\nHost: t.example\r\n\r\n";
  for (bool byte_at_a_time : {false, true}) {
    SCOPED_TRACE(byte_at_a_time ? "byte at a time" : "one piece");
    Fed fed = feedFresh(bytes, byte_at_a_time);
    EXPECT_FALSE(fed.ok);
    EXPECT_EQ(fed.error.http_status, 400);
    EXPECT_EQ(fed.error.kind, CodecErrorKind::BodyFraming) << fed.error.detail;
    // The POST reached a stream (its head was fine) and never ended; nothing else did.
    ASSERT_EQ(fed.requests.size(), 1u);
    EXPECT_NE(fed.requests[0].find("POST /v27"), std::string::npos);
    EXPECT_NE(fed.requests[0].find("ended=0"), std::string::npos) << fed.requests[0];
  }
}

INSTANTIATE_TEST_SUITE_P(
    Issue10, ServerCodecChunkCrlfTest,
    testing::Values(ChunkCase{"XX", "XX0\r\n\r\n"}, ChunkCase{"CrX", "\rX0\r\n\r\n"},
                    ChunkCase{"LfX", "\nX0\r\n\r\n"}, ChunkCase{"CrCr", "\r\r0\r\n\r\n"},
                    ChunkCase{"BareLf", "\n0\r\n\r\n"},
                    ChunkCase{"XXThenChunk", "XX3\r\nabc\r\n0\r\n\r\n"},
                    ChunkCase{"NextRequestRightAfterData", ""}),
    [](const testing::TestParamInfo<ChunkCase>& info) { return std::string(info.param.name); });

// The trailer section follows the head's line rules: llhttp alone takes a bare LF (even as
// the empty line ending the message) and obs-fold there.
TEST(ServerCodecHardeningTest, MalformedTrailerSectionRefused) {
  const std::string start =
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n";
  for (const std::string trailers :
       {"\n", "X: a\nY: b\r\n\r\n", "X: a\r\n b\r\n\r\n", "X: a\rb\r\n\r\n", "\r\r\n"}) {
    for (bool byte_at_a_time : {false, true}) {
      SCOPED_TRACE(testing::PrintToString(trailers) + (byte_at_a_time ? " byte at a time" : ""));
      Fed fed = feedFresh(start + trailers + "GET /s HTTP/1.1\r\nHost: h\r\n\r\n", byte_at_a_time);
      EXPECT_FALSE(fed.ok);
      EXPECT_EQ(fed.error.http_status, 400);
      EXPECT_EQ(fed.error.kind, CodecErrorKind::BodyFraming) << fed.error.detail;
      ASSERT_EQ(fed.requests.size(), 1u);
      EXPECT_NE(fed.requests[0].find("ended=0"), std::string::npos);
    }
  }
  // Well-formed trailers, then a pipelined request: both requests, the second one intact.
  for (bool byte_at_a_time : {false, true}) {
    Fed fed =
        feedFresh(start + "X: a\r\nY: b\r\n\r\nGET /s HTTP/1.1\r\nHost: h\r\n\r\n", byte_at_a_time);
    EXPECT_TRUE(fed.ok) << fed.error.detail;
    ASSERT_EQ(fed.requests.size(), 2u);
    EXPECT_NE(fed.requests[0].find("body=hello ended=1"), std::string::npos) << fed.requests[0];
    EXPECT_EQ(fed.requests[1].rfind("GET /s ", 0), 0u) << fed.requests[1];
  }
}

TEST(ServerCodecHardeningTest, BareLfAfterChunkSizeRefused) {
  for (bool byte_at_a_time : {false, true}) {
    Fed fed = feedFresh(
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
        byte_at_a_time);
    EXPECT_FALSE(fed.ok);
    EXPECT_EQ(fed.error.http_status, 400);
    EXPECT_EQ(fed.error.kind, CodecErrorKind::BodyFraming);
  }
}

// Finding 8: chunk-size lines are bounded (extensions are neither read nor forwarded).
TEST(ServerCodecHardeningTest, ChunkLineAtLimitAcceptedOneOverRefused) {
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  // "5;e=" + filler + "\r\n" is exactly kMaxChunkLineBytes long.
  const std::string at_limit = "5;e=" + std::string(kMaxChunkLineBytes - 6, 'a') + "\r\n";
  const std::string over = "5;e=" + std::string(kMaxChunkLineBytes - 5, 'a') + "\r\n";
  for (bool byte_at_a_time : {false, true}) {
    SCOPED_TRACE(byte_at_a_time ? "byte at a time" : "one piece");
    // First size line, and a later one (after a chunk).
    for (const std::string& prefix : {std::string(), std::string("3\r\nabc\r\n")}) {
      Fed ok = feedFresh(head + prefix + at_limit + "hello\r\n0\r\n\r\n", byte_at_a_time);
      EXPECT_TRUE(ok.ok) << ok.error.detail;
      ASSERT_EQ(ok.requests.size(), 1u);
      EXPECT_NE(ok.requests[0].find("ended=1"), std::string::npos);
      Fed refused = feedFresh(head + prefix + over + "hello\r\n0\r\n\r\n", byte_at_a_time);
      EXPECT_FALSE(refused.ok);
      EXPECT_EQ(refused.error.http_status, 400);
      EXPECT_EQ(refused.error.kind, CodecErrorKind::ChunkLineTooLong);
    }
  }
  // Endless leading zeros are a long line too (llhttp counts only the value).
  Fed zeros = feedFresh(head + std::string(4096, '0') + "5\r\nhello\r\n0\r\n\r\n", false);
  EXPECT_FALSE(zeros.ok);
  EXPECT_EQ(zeros.error.kind, CodecErrorKind::ChunkLineTooLong);
}

TEST(ServerCodecHardeningTest, ManySmallChunksStillOneBody) {
  std::string bytes = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::string expected;
  for (int i = 0; i < 50; ++i) {
    bytes += "1;x=y\r\n" + std::string(1, static_cast<char>('a' + i % 26)) + "\r\n";
    expected += static_cast<char>('a' + i % 26);
  }
  bytes += "0\r\nT: 1\r\n\r\n";
  for (bool byte_at_a_time : {false, true}) {
    Fed fed = feedFresh(bytes, byte_at_a_time);
    ASSERT_TRUE(fed.ok) << fed.error.detail;
    ASSERT_EQ(fed.requests.size(), 1u);
    EXPECT_NE(fed.requests[0].find("body=" + expected + " ended=1"), std::string::npos)
        << fed.requests[0];
  }
}

// Finding 8: limits.max_request_headers.
TEST(ServerCodecHardeningTest, FieldCountAtLimitAcceptedOneOverGets431) {
  CodecSettings settings;
  settings.max_request_headers = 3;
  const std::string three = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n";
  for (bool byte_at_a_time : {false, true}) {
    Fed ok = feedFresh(three + "\r\n", byte_at_a_time, settings);
    EXPECT_TRUE(ok.ok) << ok.error.detail;
    EXPECT_EQ(ok.requests.size(), 1u);
    Fed over = feedFresh(three + "C: 3\r\n\r\n", byte_at_a_time, settings);
    EXPECT_FALSE(over.ok);
    EXPECT_EQ(over.error.http_status, 431);
    EXPECT_EQ(over.error.kind, CodecErrorKind::TooManyFields);
    EXPECT_TRUE(over.requests.empty());
  }
  // The count is per request.
  Fed two = feedFresh(three + "\r\n" + three + "\r\n", false, settings);
  EXPECT_TRUE(two.ok) << two.error.detail;
  EXPECT_EQ(two.requests.size(), 2u);
  EXPECT_EQ(CodecSettings{}.max_request_headers, 100u);
}

struct RefusedCase {
  const char* name;
  std::string bytes;
  int status;
  CodecErrorKind kind;
};
void PrintTo(const RefusedCase& c, std::ostream* os) { *os << c.name; }

class ServerCodecRefusedTest : public testing::TestWithParam<RefusedCase> {};

TEST_P(ServerCodecRefusedTest, RefusedWholeAndByteAtATime) {
  for (bool byte_at_a_time : {false, true}) {
    SCOPED_TRACE(byte_at_a_time ? "byte at a time" : "one piece");
    Fed fed = feedFresh(GetParam().bytes, byte_at_a_time);
    EXPECT_FALSE(fed.ok);
    EXPECT_EQ(fed.error.http_status, GetParam().status) << fed.error.detail;
    EXPECT_EQ(fed.error.kind, GetParam().kind) << fed.error.detail;
    EXPECT_TRUE(fed.requests.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Issue10, ServerCodecRefusedTest,
    testing::Values(
        // RFC 9110 §9.1: a method token the server does not know is 501; a non-token is 400.
        RefusedCase{"UnknownMethod", "FOO / HTTP/1.1\r\nHost: h\r\n\r\n", 501,
                    CodecErrorKind::UnknownMethod},
        RefusedCase{"KnownMethodPrefix", "GETX / HTTP/1.1\r\nHost: h\r\n\r\n", 501,
                    CodecErrorKind::UnknownMethod},
        RefusedCase{"LowerCaseMethod", "get / HTTP/1.1\r\nHost: h\r\n\r\n", 501,
                    CodecErrorKind::UnknownMethod},
        RefusedCase{"MethodNotToken", "G@T / HTTP/1.1\r\nHost: h\r\n\r\n", 400,
                    CodecErrorKind::Malformed},
        RefusedCase{"MethodThenLineEnd", "FOO\r\n\r\n", 400, CodecErrorKind::Malformed},
        // RFC 9110 §7.2: Host = uri-host [ ":" port ].
        RefusedCase{"HostWithPath", "GET / HTTP/1.1\r\nHost: h/x\r\n\r\n", 400,
                    CodecErrorKind::InvalidHost},
        RefusedCase{"HostWithUserinfo", "GET / HTTP/1.1\r\nHost: u@h\r\n\r\n", 400,
                    CodecErrorKind::InvalidHost},
        RefusedCase{"HostWithSpace", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400,
                    CodecErrorKind::InvalidHost},
        RefusedCase{"HostBadPort", "GET / HTTP/1.1\r\nHost: h:8x\r\n\r\n", 400,
                    CodecErrorKind::InvalidHost},
        RefusedCase{"HostTwoColons", "GET / HTTP/1.1\r\nHost: h:1:2\r\n\r\n", 400,
                    CodecErrorKind::InvalidHost},
        RefusedCase{"HostUnclosedBracket", "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 400,
                    CodecErrorKind::InvalidHost},
        RefusedCase{"HostBadIpv6", "GET / HTTP/1.1\r\nHost: [zz::1]:80\r\n\r\n", 400,
                    CodecErrorKind::InvalidHost},
        RefusedCase{"HostBadPercent", "GET / HTTP/1.1\r\nHost: a%zz\r\n\r\n", 400,
                    CodecErrorKind::InvalidHost},
        RefusedCase{"HostQuote", "GET / HTTP/1.1\r\nHost: a\"b\r\n\r\n", 400,
                    CodecErrorKind::InvalidHost},
        RefusedCase{"Http10BadHost", "GET / HTTP/1.0\r\nHost: a\"b\r\n\r\n", 400,
                    CodecErrorKind::InvalidHost},
        // RFC 9112 §3.2.2 / RFC 9110 §4.2: absolute-form must be an http(s) URI with a host.
        RefusedCase{"AbsoluteOtherScheme", "GET ftp://a.example/x HTTP/1.1\r\nHost: h\r\n\r\n", 400,
                    CodecErrorKind::InvalidTarget},
        RefusedCase{"AbsoluteEmptyHost", "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", 400,
                    CodecErrorKind::InvalidTarget},
        RefusedCase{"AbsoluteUserinfo", "GET http://u@a.example/x HTTP/1.1\r\nHost: h\r\n\r\n", 400,
                    CodecErrorKind::InvalidTarget},
        RefusedCase{"AbsoluteBadAuthority", "GET http://a.ex%/x HTTP/1.1\r\nHost: h\r\n\r\n", 400,
                    CodecErrorKind::InvalidTarget}),
    [](const testing::TestParamInfo<RefusedCase>& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Issue10, ServerCodecParseTest,
    testing::Values(
        // RFC 9112 §3.2.2: the target's authority replaces Host; origin-form goes upstream.
        ParseCase{"AbsoluteForm",
                  "GET http://a.example:8080/x?y=1 HTTP/1.1\r\nHost: b.example\r\n\r\n",
                  {"GET /x?y=1 authority=a.example:8080\nHost: a.example:8080\n"
                   "end_on_headers=1 body= ended=1"}},
        ParseCase{"AbsoluteFormEmptyPath",
                  "GET HTTPS://a.example?q HTTP/1.1\r\nHost: a.example\r\n\r\n",
                  {"GET /?q authority=a.example\nHost: a.example\nend_on_headers=1 body= ended=1"}},
        ParseCase{"AbsoluteFormHttp10NoHost",
                  "GET http://[::1]:81/z HTTP/1.0\r\n\r\n",
                  {"GET /z authority=[::1]:81\nHost: [::1]:81\nend_on_headers=1 body= ended=1"}},
        ParseCase{"EmptyHost",
                  "GET / HTTP/1.1\r\nHost:\r\n\r\n",
                  {"GET / authority=\nHost: \nend_on_headers=1 body= ended=1"}},
        ParseCase{"HostForms",
                  "GET / HTTP/1.1\r\nHost: 10.0.0.1:80\r\n\r\n"
                  "GET / HTTP/1.1\r\nHost: [2001:db8::1]\r\n\r\n"
                  "GET / HTTP/1.1\r\nHost: a-b.example_1~!$&'()*+;=%41:\r\n\r\n",
                  {"GET / authority=10.0.0.1:80\nHost: 10.0.0.1:80\nend_on_headers=1 body= ended=1",
                   "GET / authority=[2001:db8::1]\nHost: [2001:db8::1]\nend_on_headers=1 body= "
                   "ended=1",
                   "GET / authority=a-b.example_1~!$&'()*+;=%41:\nHost: "
                   "a-b.example_1~!$&'()*+;=%41:\nend_on_headers=1 body= ended=1"}},
        ParseCase{"AsteriskForm",
                  "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
                  {"OPTIONS * authority=h\nHost: h\nend_on_headers=1 body= ended=1"}}),
    [](const testing::TestParamInfo<ParseCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ferry::http::http1
