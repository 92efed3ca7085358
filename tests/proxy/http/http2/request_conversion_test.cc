#include "proxy/http/http2/request_conversion.h"

#include <gtest/gtest.h>

namespace ferry::http::http2 {
namespace {

std::string describe(const HeaderMap& headers) {
  std::string out;
  for (const auto& f : headers.fields())
    out.append(f.name).append(": ").append(f.value).append("\n");
  return out;
}

void addGet(RequestHeadBuilder& b) {
  b.addField(":method", "GET");
  b.addField(":scheme", "https");
  b.addField(":authority", "a.example");
  b.addField(":path", "/p");
}

TEST(RequestHeadBuilder, HostFirstThenFieldsThenCookie) {
  RequestHeadBuilder b(1000, 10);
  addGet(b);
  b.addField("cookie", "x=1");
  b.addField("accept", "*/*");
  b.addField("cookie", "y=2");
  auto r = b.finish();
  ASSERT_TRUE(r.headers);
  EXPECT_EQ(describe(r.headers->headers), "host: a.example\naccept: */*\ncookie: x=1; y=2\n");
  EXPECT_EQ(r.headers->protocol, "HTTP/2");
}

TEST(RequestHeadBuilder, NoRegularFieldsStillGetsHost) {
  RequestHeadBuilder b(1000, 10);
  addGet(b);
  auto r = b.finish();
  ASSERT_TRUE(r.headers);
  EXPECT_EQ(describe(r.headers->headers), "host: a.example\n");
}

TEST(RequestHeadBuilder, HostKeepsItsPlaceWithoutAuthority) {
  RequestHeadBuilder b(1000, 10);
  b.addField(":method", "GET");
  b.addField(":scheme", "http");
  b.addField(":path", "/");
  b.addField("accept", "*/*");
  b.addField("host", "h.example");
  auto r = b.finish();
  ASSERT_TRUE(r.headers);
  EXPECT_EQ(r.headers->authority, "h.example");
  EXPECT_EQ(describe(r.headers->headers), "accept: */*\nhost: h.example\n");
}

// RFC 9113 §8.3.1: Host must name the entity :authority names (after RFC 3986 §6.2
// normalisation: case, an empty or default port); otherwise the request is malformed (400).
TEST(RequestHeadBuilder, HostMustNameTheAuthoritysEntity) {
  struct Case {
    const char* scheme;
    const char* authority;
    const char* host;
    bool same;
  };
  const Case cases[] = {
      {"https", "a.example", "a.example", true},
      {"https", "a.example", "A.Example", true},
      {"https", "a.example", "a.example:443", true},
      {"https", "a.example:443", "a.example:", true},
      {"http", "a.example", "a.example:80", true},
      {"https", "[::1]", "[::1]:443", true},
      {"https", "a.example", "b.example", false},
      {"https", "a.example", "a.example:80", false},
      {"http", "a.example:8080", "a.example", false},
      {"https", "[::1]", "[::2]", false},
  };
  for (const Case& c : cases) {
    RequestHeadBuilder b(1000, 10);
    b.addField(":method", "GET");
    b.addField(":scheme", c.scheme);
    b.addField(":authority", c.authority);
    b.addField(":path", "/");
    b.addField("host", c.host);
    auto r = b.finish();
    SCOPED_TRACE(std::string(c.scheme) + " " + c.authority + " / " + c.host);
    if (c.same) {
      ASSERT_TRUE(r.headers);
      EXPECT_EQ(r.headers->authority, c.authority);
      EXPECT_EQ(describe(r.headers->headers), std::string("host: ") + c.authority + "\n");
    } else {
      EXPECT_FALSE(r.headers);
      EXPECT_EQ(r.error.http_status, 400);
      EXPECT_EQ(r.error.kind, CodecErrorKind::InvalidHost);
    }
  }
}

TEST(RequestHeadBuilder, HopByHopFieldsDropped) {
  RequestHeadBuilder b(1000, 10);
  addGet(b);
  b.addField("te", "trailers");
  b.addField("trailer", "x-sum");
  auto r = b.finish();
  ASSERT_TRUE(r.headers);
  EXPECT_EQ(describe(r.headers->headers), "host: a.example\n");
  EXPECT_TRUE(r.headers->headers.wireSafe());
}

TEST(RequestHeadBuilder, ByteLimitIsInclusive) {
  // ":method" "GET" ":scheme" "https" ":authority" "a.example" ":path" "/p" = 48 bytes.
  RequestHeadBuilder exact(48, 10);
  addGet(exact);
  EXPECT_TRUE(exact.finish().headers);
  RequestHeadBuilder over(47, 10);
  addGet(over);
  auto r = over.finish();
  EXPECT_FALSE(r.headers);
  EXPECT_EQ(r.error.http_status, 431);
  EXPECT_EQ(r.error.kind, CodecErrorKind::HeadTooLarge);
}

TEST(RequestHeadBuilder, FieldLimitCountsRegularFields) {
  RequestHeadBuilder b(1000, 2);
  addGet(b);  // pseudo-headers do not count
  b.addField("a", "1");
  b.addField("b", "2");
  EXPECT_TRUE(b.finish().headers);
  RequestHeadBuilder c(1000, 2);
  addGet(c);
  c.addField("a", "1");
  c.addField("b", "2");
  c.addField("c", "3");
  auto r = c.finish();
  EXPECT_FALSE(r.headers);
  EXPECT_EQ(r.error.kind, CodecErrorKind::TooManyFields);
}

TEST(RequestHeadBuilder, ConnectAndUserinfoRefused) {
  RequestHeadBuilder connect(1000, 10);
  connect.addField(":method", "CONNECT");
  connect.addField(":authority", "a.example:443");
  EXPECT_EQ(connect.finish().error.http_status, 501);
  RequestHeadBuilder userinfo(1000, 10);
  userinfo.addField(":method", "GET");
  userinfo.addField(":scheme", "https");
  userinfo.addField(":authority", "u@a.example");
  userinfo.addField(":path", "/");
  auto r = userinfo.finish();
  EXPECT_EQ(r.error.http_status, 400);
  EXPECT_EQ(r.error.kind, CodecErrorKind::InvalidHost);
}

TEST(RequestHeadBuilder, PathMustBeOriginFormWhateverTheScheme) {
  RequestHeadBuilder b(1000, 10);
  b.addField(":method", "GET");
  b.addField(":scheme", "foo");  // nghttp2 checks :path only for http and https
  b.addField(":authority", "a.example");
  b.addField(":path", "relative");
  auto r = b.finish();
  EXPECT_FALSE(r.headers);
  EXPECT_EQ(r.error.http_status, 400);
  EXPECT_EQ(r.error.kind, CodecErrorKind::InvalidTarget);
  RequestHeadBuilder star(1000, 10);
  star.addField(":method", "OPTIONS");
  star.addField(":scheme", "https");
  star.addField(":authority", "a.example");
  star.addField(":path", "*");
  EXPECT_TRUE(star.finish().headers);
}

TEST(RequestHeadBuilder, UnknownMethodAnswered501LikeHttp11) {
  RequestHeadBuilder b(1000, 10);
  b.addField(":method", "BREW");
  b.addField(":scheme", "https");
  b.addField(":authority", "a.example");
  b.addField(":path", "/");
  auto r = b.finish();
  EXPECT_FALSE(r.headers);
  EXPECT_EQ(r.error.http_status, 501);
  EXPECT_EQ(r.error.kind, CodecErrorKind::UnknownMethod);
  for (const char* method : {"GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"}) {
    RequestHeadBuilder ok(1000, 10);
    ok.addField(":method", method);
    ok.addField(":scheme", "https");
    ok.addField(":authority", "a.example");
    ok.addField(":path", "/");
    EXPECT_TRUE(ok.finish().headers) << method;
  }
}

TEST(RequestHeadBuilder, HeadRequestKnown) {
  RequestHeadBuilder b(1000, 10);
  b.addField(":method", "HEAD");
  EXPECT_TRUE(b.isHeadRequest());
}

}  // namespace
}  // namespace ferry::http::http2
