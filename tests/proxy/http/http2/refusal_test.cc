// Malformed requests and requests over the limits: the stream is refused (RST_STREAM or a
// status), the core never sees it, and the connection lives on.

#include <gtest/gtest.h>

#include "h2_test_client.h"

namespace ferry::http::http2::testing {
namespace {

Fields get(Fields extra = {}) {
  Fields fields = {
      {":method", "GET"}, {":scheme", "https"}, {":authority", "example.com"}, {":path", "/"}};
  fields.insert(fields.end(), extra.begin(), extra.end());
  return fields;
}

struct Case {
  const char* name;
  Fields fields;
};

class Http2Malformed : public ::testing::TestWithParam<Case> {};

// RFC 9113 §8.1.1: a malformed request is a stream error of type PROTOCOL_ERROR.
TEST_P(Http2Malformed, StreamResetConnectionLivesOn) {
  Conversation c;
  int32_t bad = c.client.request(GetParam().fields);
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.client.stream(bad).reset);
  EXPECT_EQ(c.client.stream(bad).reset_code, static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  EXPECT_TRUE(c.callbacks.streams.empty());
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
  EXPECT_EQ(c.callbacks.refused[0].http_status, 0);
  EXPECT_EQ(c.callbacks.refused[0].kind, CodecErrorKind::Http2Protocol);
  EXPECT_FALSE(c.callbacks.refused[0].detail.empty());

  // The next request on the connection is served.
  int32_t good = c.client.get("/ok");
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  EXPECT_EQ(c.callbacks.streams[0]->headers->path, "/ok");
  EXPECT_FALSE(c.client.stream(good).reset);
  EXPECT_FALSE(c.codec->wantsClose());
}

INSTANTIATE_TEST_SUITE_P(
    Rfc9113, Http2Malformed,
    ::testing::Values(
        Case{"ConnectionHeader", get({{"connection", "keep-alive"}})},
        Case{"KeepAlive", get({{"keep-alive", "timeout=5"}})},
        Case{"TransferEncoding", get({{"transfer-encoding", "chunked"}})},
        Case{"Upgrade", get({{"upgrade", "websocket"}})},
        Case{"ProxyConnection", get({{"proxy-connection", "close"}})},
        Case{"TeGzip", get({{"te", "gzip"}})}, Case{"NameWithSpace", get({{"x bad", "1"}})},
        Case{"ValueWithLeadingSpace", get({{"x-v", " padded"}})},
        Case{"ValueWithNewline", get({{"x-v", "a\nb"}})},
        Case{"MissingPath",
             Fields{{":method", "GET"}, {":scheme", "https"}, {":authority", "e.com"}}},
        Case{"EmptyPath",
             Fields{
                 {":method", "GET"}, {":scheme", "https"}, {":authority", "e.com"}, {":path", ""}}},
        Case{"MissingMethod",
             Fields{{":scheme", "https"}, {":authority", "e.com"}, {":path", "/"}}},
        Case{"MissingScheme", Fields{{":method", "GET"}, {":authority", "e.com"}, {":path", "/"}}},
        Case{"NoAuthorityNoHost", Fields{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}}},
        Case{"PseudoAfterRegular", Fields{{":method", "GET"},
                                          {":scheme", "https"},
                                          {"accept", "*/*"},
                                          {":authority", "e.com"},
                                          {":path", "/"}}},
        Case{"UnknownPseudo", get({{":foo", "bar"}})},
        Case{"ResponsePseudo", Fields{{":status", "200"},
                                      {":method", "GET"},
                                      {":scheme", "https"},
                                      {":authority", "e.com"},
                                      {":path", "/"}}},
        Case{"DuplicateMethod", Fields{{":method", "GET"},
                                       {":method", "POST"},
                                       {":scheme", "https"},
                                       {":authority", "e.com"},
                                       {":path", "/"}}},
        Case{"RelativePath", Fields{{":method", "GET"},
                                    {":scheme", "https"},
                                    {":authority", "e.com"},
                                    {":path", "relative"}}},
        Case{"ContentLengthNotANumber", get({{"content-length", "abc"}})}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// nghttp2's client lowercases names before sending; raw frames carry the uppercase one.
TEST(Http2Refusal, UppercaseNameResetsTheStream) {
  Conversation c;
  ASSERT_TRUE(c.sendRaw(preface() + frame(NGHTTP2_HEADERS,
                                          NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                                          getBlock() + literal("X-Upper", "1"))));
  EXPECT_TRUE(c.callbacks.streams.empty());
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
  EXPECT_EQ(c.callbacks.refused[0].kind, CodecErrorKind::Http2Protocol);
  bool reset = false;
  for (const RawFrame& f : parseFrames(c.output.toString())) {
    reset |= f.type == NGHTTP2_RST_STREAM && f.stream_id == 1 &&
             f.payload == std::string("\0\0\0\x01", 4);
  }
  EXPECT_TRUE(reset);
}

TEST(Http2Refusal, ConnectAnswered501) {
  Conversation c;
  int32_t id = c.client.request({{":method", "CONNECT"}, {":authority", "example.com:443"}});
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.client.stream(id).heads.size(), 1u);
  EXPECT_EQ(c.client.stream(id).heads[0][0],
            (std::pair<std::string, std::string>{":status", "501"}));
  EXPECT_TRUE(c.callbacks.streams.empty());
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
  EXPECT_EQ(c.callbacks.refused[0].http_status, 501);
}

TEST(Http2Refusal, NonHttpSchemeWithRelativePathAnswered400) {
  Conversation c;
  int32_t id = c.client.request(
      {{":method", "GET"}, {":scheme", "foo"}, {":authority", "e.com"}, {":path", "rel"}});
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.callbacks.streams.empty());
  EXPECT_EQ(c.client.stream(id).heads.at(0).at(0).second, "400");
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
  EXPECT_EQ(c.callbacks.refused[0].kind, CodecErrorKind::InvalidTarget);
}

TEST(Http2Refusal, UserinfoInAuthority) {
  Conversation c;
  int32_t id = c.client.request({{":method", "GET"},
                                 {":scheme", "https"},
                                 {":authority", "user@example.com"},
                                 {":path", "/"}});
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.callbacks.streams.empty());
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
  EXPECT_TRUE(c.client.stream(id).ended || c.client.stream(id).reset);
}

// A header list over the limits is answered 431, then the connection ends with GOAWAY
// ENHANCE_YOUR_CALM (server_codec.cc, cutOversizedBlock): nothing more of it is decoded.
void expectCutWithEnhanceYourCalm(Conversation& c) {
  EXPECT_FALSE(c.dispatch_ok);
  EXPECT_TRUE(c.codec->wantsClose());
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Flood);
  EXPECT_EQ(c.codec->error().http_status, 0);
  ASSERT_FALSE(c.client.goaways().empty()) << "no GOAWAY";
  EXPECT_EQ(c.client.goaways().back().error_code, static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

TEST(Http2Refusal, HeaderListOverTheLimitAnswered431ThenTheConnectionEnds) {
  Http2Settings settings;
  settings.max_request_header_bytes = 4096;
  Conversation c(settings);
  Fields extra;
  for (int i = 0; i < 5; ++i)
    extra.push_back({"x-big-" + std::to_string(i), std::string(1000, 'v')});
  int32_t id = c.client.request(get(extra));
  c.exchange();
  EXPECT_TRUE(c.callbacks.streams.empty());
  ASSERT_EQ(c.client.stream(id).heads.size(), 1u);
  EXPECT_EQ(c.client.stream(id).heads[0][0].second, "431");
  EXPECT_TRUE(c.client.stream(id).ended);
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
  EXPECT_EQ(c.callbacks.refused[0].kind, CodecErrorKind::HeadTooLarge);
  EXPECT_EQ(c.callbacks.refused[0].http_status, 431);
  ASSERT_NO_FATAL_FAILURE(expectCutWithEnhanceYourCalm(c));
  EXPECT_EQ(c.client.goaways().back().last_stream_id, id);

  // Just under the limit is served.
  Conversation fits_c(settings);
  Fields fits;
  for (int i = 0; i < 3; ++i)
    fits.push_back({"x-big-" + std::to_string(i), std::string(1000, 'v')});
  fits_c.client.request(get(fits));
  ASSERT_TRUE(fits_c.exchange());
  EXPECT_EQ(fits_c.callbacks.streams.size(), 1u);
  EXPECT_FALSE(fits_c.codec->wantsClose());
}

TEST(Http2Refusal, TooManyFieldsAnswered431) {
  Conversation c;
  Fields extra;
  for (int i = 0; i < 101; ++i) extra.push_back({"x-f" + std::to_string(i), "1"});
  int32_t id = c.client.request(get(extra));
  c.exchange();
  EXPECT_TRUE(c.callbacks.streams.empty());
  EXPECT_EQ(c.client.stream(id).heads.at(0).at(0).second, "431");
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
  EXPECT_EQ(c.callbacks.refused[0].kind, CodecErrorKind::TooManyFields);
  expectCutWithEnhanceYourCalm(c);
}

TEST(Http2Refusal, CookieCrumbsCountAsFields) {
  Conversation c;
  Fields extra;
  for (int i = 0; i < 101; ++i) extra.push_back({"cookie", "c" + std::to_string(i) + "=1"});
  c.client.request(get(extra));
  c.exchange();
  EXPECT_TRUE(c.callbacks.streams.empty());
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
  EXPECT_EQ(c.callbacks.refused[0].kind, CodecErrorKind::TooManyFields);
  expectCutWithEnhanceYourCalm(c);
}

// HPACK bomb: one 4000-byte entry in the dynamic table, then a block of 1-byte references to
// it. The limit applies to the decoded list, so ~60 bytes on the wire are refused as 240 KB,
// and decoding stops there: the request after the bomb, in the same bytes, is never seen.
TEST(Http2Refusal, HpackBombRefusedOnTheDecodedSizeAndTheConnectionCut) {
  Conversation c;
  std::string bytes =
      preface() + frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                        getBlock("/seed") + indexedLiteral("x-bomb", std::string(4000, 'b')));
  std::string bomb = getBlock("/bomb");
  for (int i = 0; i < 60; ++i) bomb += indexed(62);
  bytes += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 3, bomb);
  bytes += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 5,
                 getBlock("/after"));
  EXPECT_FALSE(c.sendRaw(bytes));
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  EXPECT_EQ(c.callbacks.streams[0]->headers->path, "/seed");
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
  EXPECT_EQ(c.callbacks.refused[0].kind, CodecErrorKind::HeadTooLarge);
  // On the wire: stream 3's 431, then GOAWAY ENHANCE_YOUR_CALM naming stream 3.
  bool answered_431 = false;
  bool goaway = false;
  for (const RawFrame& f : parseFrames(c.output.toString())) {
    if (f.type == NGHTTP2_HEADERS && f.stream_id == 3) answered_431 = !goaway;
    if (f.type == NGHTTP2_GOAWAY) {
      goaway = true;
      EXPECT_EQ(f.payload.substr(0, 8), std::string("\0\0\0\x03\0\0\0\x0b", 8));
    }
  }
  EXPECT_TRUE(answered_431) << "no response HEADERS on stream 3 before the GOAWAY";
  EXPECT_TRUE(goaway);
  EXPECT_TRUE(c.codec->wantsClose());
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Flood);
}

// Trailers are dropped, but decoded all the same: a bomb in them is cut off like one in a head.
TEST(Http2Refusal, HpackBombInTrailersCutsTheConnection) {
  Conversation c;
  std::string bytes =
      preface() + frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                        getBlock("/upload") + indexedLiteral("x-bomb", std::string(4000, 'b')));
  std::string bomb;
  for (int i = 0; i < 60; ++i) bomb += indexed(62);
  bytes += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1, bomb);
  EXPECT_FALSE(c.sendRaw(bytes));
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  EXPECT_TRUE(c.callbacks.refused.empty());  // the head was fine; the connection is cut
  EXPECT_TRUE(c.codec->wantsClose());
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Flood);
}

// RFC 9113 §8.3.1: a Host naming another entity than :authority makes the request malformed,
// answered 400 like ferry's other refusals of an authority (userinfo); the connection goes on.
TEST(Http2Refusal, HostDifferingFromAuthorityAnswered400) {
  Conversation c;
  int32_t id = c.client.request(get({{"host", "other.example"}}));
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.callbacks.streams.empty());
  EXPECT_EQ(c.client.stream(id).heads.at(0).at(0).second, "400");
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
  EXPECT_EQ(c.callbacks.refused[0].kind, CodecErrorKind::InvalidHost);
  EXPECT_EQ(c.callbacks.refused[0].http_status, 400);

  // The same entity written another way is one request (RFC 3986 §6.2: case, default port).
  c.client.request({{":method", "GET"},
                    {":scheme", "https"},
                    {":authority", "Example.COM"},
                    {":path", "/same"},
                    {"host", "example.com:443"}});
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  EXPECT_EQ(c.callbacks.streams[0]->headers->authority, "Example.COM");
  EXPECT_EQ(c.callbacks.streams[0]->headers->headers.count("host"), 1u);
  EXPECT_FALSE(c.codec->wantsClose());
}

TEST(Http2Refusal, ContentLengthNotMatchingDataResetsTheStream) {
  Conversation c;
  std::string body = "short";
  int32_t id = c.client.request({{":method", "POST"},
                                 {":scheme", "https"},
                                 {":authority", "e.com"},
                                 {":path", "/"},
                                 {"content-length", "10"}},
                                &body);
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  EXPECT_EQ(c.callbacks.streams[0]->resets,
            std::vector<StreamResetReason>{StreamResetReason::ProtocolError});
  EXPECT_EQ(c.client.stream(id).reset_code, static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
}

// RFC 9113 §5.1.2: streams over SETTINGS_MAX_CONCURRENT_STREAMS are refused. Here the client
// opens them before it saw the server's SETTINGS; nghttp2 answers REFUSED_STREAM (so the client
// may retry them). After the client acknowledged the limit, nghttp2 treats going over it as a
// connection error.
TEST(Http2Refusal, StreamsOverTheConcurrencyLimitRefused) {
  Http2Settings settings;
  settings.max_concurrent_streams = 2;
  Conversation c(settings);
  int32_t s1 = c.client.get("/1");
  int32_t s3 = c.client.get("/3");
  int32_t s5 = c.client.get("/5");
  ASSERT_TRUE(c.send());
  EXPECT_EQ(c.callbacks.streams.size(), 2u);
  c.deliver();
  EXPECT_TRUE(c.client.stream(s5).reset);
  EXPECT_EQ(c.client.stream(s5).reset_code, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_FALSE(c.client.stream(s1).reset);
  EXPECT_FALSE(c.client.stream(s3).reset);
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
}

}  // namespace
}  // namespace ferry::http::http2::testing
