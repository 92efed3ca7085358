// Requests in, responses out: the HTTP/2 server codec driven by a real nghttp2 client session.

#include <gtest/gtest.h>

#include "h2_test_client.h"

namespace ferry::http::http2::testing {
namespace {

std::string field(const Fields& fields, const std::string& name) {
  for (const auto& [n, v] : fields) {
    if (n == name) return v;
  }
  return "<absent>";
}

std::string describe(const HeaderMap& headers) {
  std::string out;
  for (const auto& f : headers.fields())
    out.append(f.name).append(": ").append(f.value).append("\n");
  return out;
}

ResponseHeaders response(int status, Fields fields = {}) {
  ResponseHeaders r;
  r.status = status;
  for (const auto& [n, v] : fields) r.headers.add(n, v);
  return r;
}

TEST(Http2ServerCodec, ConvertsRequestForTheHttp11Core) {
  Conversation c;
  c.client.request({{":method", "GET"},
                    {":scheme", "https"},
                    {":authority", "example.com:8443"},
                    {":path", "/v1/stream/feed?offset=-1"},
                    {"cookie", "a=1"},
                    {"accept", "text/event-stream"},
                    {"cookie", "b=2"},
                    {"te", "trailers"}});
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  const FakeStream& s = *c.callbacks.streams[0];
  ASSERT_TRUE(s.headers);
  EXPECT_EQ(s.headers->method, "GET");
  EXPECT_EQ(s.headers->path, "/v1/stream/feed?offset=-1");
  EXPECT_EQ(s.headers->authority, "example.com:8443");
  EXPECT_EQ(s.headers->protocol, "HTTP/2");
  // Host from :authority first; cookie crumbs joined (RFC 9113 §8.2.3); te is hop-by-hop.
  EXPECT_EQ(describe(s.headers->headers),
            "host: example.com:8443\naccept: text/event-stream\ncookie: a=1; b=2\n");
  EXPECT_TRUE(s.headers->headers.wireSafe());
  EXPECT_TRUE(s.headers_end_stream);
}

// A host field naming the same entity as :authority (RFC 3986 §6.2: case, default port) is
// folded into the one Host made from :authority; a different one is a 400 (refusal_test).
TEST(Http2ServerCodec, HostNamingTheAuthorityIsFoldedIntoIt) {
  Conversation c;
  c.client.request({{":method", "GET"},
                    {":scheme", "http"},
                    {":authority", "a.example"},
                    {":path", "/"},
                    {"host", "A.Example:80"}});
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  EXPECT_EQ(c.callbacks.streams[0]->headers->authority, "a.example");
  EXPECT_EQ(describe(c.callbacks.streams[0]->headers->headers), "host: a.example\n");
}

TEST(Http2ServerCodec, HostWithoutAuthority) {
  Conversation c;
  c.client.request(
      {{":method", "GET"}, {":scheme", "http"}, {":path", "/x"}, {"host", "h.example"}});
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  EXPECT_EQ(c.callbacks.streams[0]->headers->authority, "h.example");
  EXPECT_EQ(describe(c.callbacks.streams[0]->headers->headers), "host: h.example\n");
}

TEST(Http2ServerCodec, DeliversBodyWithEndStream) {
  Conversation c;
  std::string body(40000, 'x');
  c.client.request({{":method", "POST"},
                    {":scheme", "https"},
                    {":authority", "example.com"},
                    {":path", "/append"},
                    {"content-length", std::to_string(body.size())}},
                   &body);
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  const FakeStream& s = *c.callbacks.streams[0];
  EXPECT_FALSE(s.headers_end_stream);
  EXPECT_EQ(s.body, body);
  EXPECT_TRUE(s.ended);
  EXPECT_EQ(s.headers->headers.get("content-length").value_or(""), "40000");
}

TEST(Http2ServerCodec, TrailersAreDroppedAndEndTheBody) {
  Conversation c;
  // Raw frames: HEADERS, DATA, then trailers with END_STREAM.
  std::string bytes = preface() +
                      frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                            literal(":method", "POST") + literal(":scheme", "https") +
                                literal(":authority", "example.com") + literal(":path", "/")) +
                      frame(NGHTTP2_DATA, 0, 1, "abc") +
                      frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                            literal("x-checksum", "1"));
  ASSERT_TRUE(c.sendRaw(bytes));
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  const FakeStream& s = *c.callbacks.streams[0];
  EXPECT_EQ(s.body, "abc");
  EXPECT_TRUE(s.ended);
  EXPECT_FALSE(s.headers->headers.has("x-checksum"));
}

// Codecs are fed one byte at a time (proxygen's habit): the result must not depend on how the
// bytes were split.
TEST(Http2ServerCodec, ByteAtATimeGivesTheSameRequest) {
  auto run = [](bool bytewise) {
    Conversation c;
    std::string body(3000, 'z');
    c.client.request({{":method", "POST"},
                      {":scheme", "https"},
                      {":authority", "example.com"},
                      {":path", "/p"},
                      {"cookie", "a=1"},
                      {"cookie", "b=2"}},
                     &body);
    const std::string bytes = c.client.takeOutput();
    if (bytewise) {
      for (char ch : bytes) {
        EXPECT_TRUE(c.sendRaw(std::string(1, ch)));
        // Half a request head: the head timeout applies.
      }
    } else {
      EXPECT_TRUE(c.sendRaw(bytes));
    }
    EXPECT_EQ(c.callbacks.streams.size(), 1u);
    if (c.callbacks.streams.empty()) return std::string("<none>");
    const FakeStream& s = *c.callbacks.streams[0];
    return s.headers->method + " " + s.headers->path + "\n" + describe(s.headers->headers) +
           "body=" + std::to_string(s.body.size()) + " ended=" + std::to_string(s.ended);
  };
  const std::string whole = run(false);
  EXPECT_EQ(whole, "POST /p\nhost: example.com\ncookie: a=1; b=2\nbody=3000 ended=1");
  EXPECT_EQ(run(true), whole);
}

TEST(Http2ServerCodec, WritesResponseHeadAndBody) {
  Conversation c;
  int32_t id = c.client.get("/");
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  ResponseEncoder& encoder = *c.callbacks.streams[0]->encoder;
  encoder.encodeHeaders(response(200, {{"Content-Type", "text/plain"},
                                       {"Connection", "keep-alive, X-Hop"},
                                       {"X-Hop", "1"},
                                       {"Keep-Alive", "timeout=5"},
                                       {"Transfer-Encoding", "chunked"},
                                       {"Stream-Next-Offset", "42"}}),
                        false);
  EXPECT_TRUE(encoder.canEndEarly());
  Buffer body;
  body.add("hello ");
  encoder.encodeData(body, false);
  EXPECT_TRUE(body.empty());
  body.add("world");
  encoder.encodeData(body, true);
  // The encoder calls put the frames into the output without a dispatch.
  ASSERT_FALSE(c.output.empty());
  c.deliver();
  const ClientStream& s = c.client.stream(id);
  ASSERT_EQ(s.heads.size(), 1u);
  EXPECT_EQ(
      s.heads[0],
      (Fields{{":status", "200"}, {"content-type", "text/plain"}, {"stream-next-offset", "42"}}));
  EXPECT_EQ(s.body, "hello world");
  EXPECT_TRUE(s.ended);
  EXPECT_FALSE(s.reset);
}

TEST(Http2ServerCodec, HeadResponseHasNoBody) {
  Conversation c;
  int32_t id = c.client.request(
      {{":method", "HEAD"}, {":scheme", "https"}, {":authority", "e.com"}, {":path", "/"}});
  ASSERT_TRUE(c.exchange());
  ResponseEncoder& encoder = *c.callbacks.streams[0]->encoder;
  encoder.encodeHeaders(response(200, {{"content-length", "5"}}), false);
  Buffer body;
  body.add("hello");
  encoder.encodeData(body, true);
  ASSERT_TRUE(c.exchange());
  const ClientStream& s = c.client.stream(id);
  ASSERT_EQ(s.heads.size(), 1u);
  EXPECT_EQ(field(s.heads[0], "content-length"), "5");
  EXPECT_EQ(s.body, "");
  EXPECT_TRUE(s.ended);
}

TEST(Http2ServerCodec, InformationalBeforeFinalAndNo101) {
  Conversation c;
  int32_t id = c.client.get("/");
  ASSERT_TRUE(c.exchange());
  ResponseEncoder& encoder = *c.callbacks.streams[0]->encoder;
  encoder.encodeInformational(response(101, {{"upgrade", "websocket"}}));
  encoder.encodeInformational(response(103, {{"link", "</a.css>; rel=preload"}}));
  encoder.encodeHeaders(response(204), true);
  ASSERT_TRUE(c.exchange());
  const ClientStream& s = c.client.stream(id);
  ASSERT_EQ(s.heads.size(), 2u);
  EXPECT_EQ(s.heads[0], (Fields{{":status", "103"}, {"link", "</a.css>; rel=preload"}}));
  EXPECT_EQ(s.heads[1], (Fields{{":status", "204"}}));
  EXPECT_TRUE(s.ended);
}

TEST(Http2ServerCodec, ManyStreamsOnOneConnection) {
  Conversation c;
  std::vector<int32_t> ids;
  for (int i = 0; i < 50; ++i) ids.push_back(c.client.get("/feed/" + std::to_string(i)));
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 50u);
  // Answer in reverse order: streams are independent.
  for (int i = 49; i >= 0; --i) {
    FakeStream& s = *c.callbacks.streams[i];
    s.encoder->encodeHeaders(response(200), false);
    Buffer body;
    body.add(s.headers->path);
    s.encoder->encodeData(body, true);
  }
  ASSERT_TRUE(c.exchange());
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(c.client.stream(ids[i]).body, "/feed/" + std::to_string(i));
    EXPECT_TRUE(c.client.stream(ids[i]).ended);
  }
  EXPECT_FALSE(c.codec->wantsClose());
  EXPECT_EQ(c.codec->protocol(), "HTTP/2");
}

TEST(Http2ServerCodec, ResponseCompleteBeforeRequestResetsWithNoError) {
  // HEADERS without END_STREAM: the request body is still to come when the answer is done.
  Conversation r;
  ASSERT_TRUE(
      r.sendRaw(preface() + frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                                  literal(":method", "POST") + literal(":scheme", "https") +
                                      literal(":authority", "e.com") + literal(":path", "/"))));
  ASSERT_EQ(r.callbacks.streams.size(), 1u);
  r.output.clear();
  r.callbacks.streams[0]->encoder->encodeHeaders(response(413), true);
  bool rst_no_error = false;
  for (const RawFrame& f : parseFrames(r.output.toString())) {
    if (f.type == NGHTTP2_RST_STREAM && f.stream_id == 1 && f.payload == std::string(4, '\0')) {
      rst_no_error = true;
    }
  }
  EXPECT_TRUE(rst_no_error);
}

}  // namespace
}  // namespace ferry::http::http2::testing
