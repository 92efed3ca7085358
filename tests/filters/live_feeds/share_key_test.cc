// Which live reads may share one upstream read (filters/live_feeds/share_key.h).
#include "filters/live_feeds/share_key.h"

#include <gtest/gtest.h>

namespace ferry::filters {
namespace {

http::RequestHeaders read(std::string path) {
  http::RequestHeaders r;
  r.method = "GET";
  r.path = std::move(path);
  r.authority = "streams.local";
  return r;
}

const std::vector<std::string> kNoExtra;

TEST(ShareKeyTest, ReadsOfOneStreamAtAnyPositionHaveOneKey) {
  EXPECT_EQ(shareKey(read("/v1/stream/a?offset=5&live=sse"), kNoExtra),
            shareKey(read("/v1/stream/a?offset=now&live=sse&cursor=7"), kNoExtra));
}

TEST(ShareKeyTest, AnotherStreamRouteQueryMethodOrAuthorityIsAnotherKey) {
  const std::string key = shareKey(read("/v1/stream/a?offset=5&live=sse"), kNoExtra);
  EXPECT_NE(key, shareKey(read("/v1/stream/b?offset=5&live=sse"), kNoExtra));
  EXPECT_NE(key, shareKey(read("/v1/stream/a?offset=5&live=sse&x=1"), kNoExtra));
  EXPECT_NE(key, shareKey(read("/v1/stream/a?offset=5&live=long-poll"), kNoExtra));
  auto head = read("/v1/stream/a?offset=5&live=sse");
  head.method = "HEAD";
  EXPECT_NE(key, shareKey(head, kNoExtra));
  auto other_host = read("/v1/stream/a?offset=5&live=sse");
  other_host.authority = "other";
  EXPECT_NE(key, shareKey(other_host, kNoExtra));
  // Order of the other parameters is kept (the instance may read them in order).
  EXPECT_NE(shareKey(read("/v1/stream/a?live=sse&x=1"), kNoExtra),
            shareKey(read("/v1/stream/a?x=1&live=sse"), kNoExtra));
}

TEST(ShareKeyTest, CredentialsAndListedHeadersMustBeEqual) {
  auto a = read("/v1/stream/a?live=sse");
  auto b = read("/v1/stream/a?live=sse");
  a.headers.add("Authorization", "Bearer one");
  b.headers.add("authorization", "Bearer two");
  EXPECT_NE(shareKey(a, kNoExtra), shareKey(b, kNoExtra));
  b.headers.set("authorization", "Bearer one");
  EXPECT_EQ(shareKey(a, kNoExtra), shareKey(b, kNoExtra));

  a.headers.add("cookie", "s=1");
  EXPECT_NE(shareKey(a, kNoExtra), shareKey(b, kNoExtra));  // absent differs from present
  b.headers.add("cookie", "s=1");
  EXPECT_EQ(shareKey(a, kNoExtra), shareKey(b, kNoExtra));

  a.headers.add("x-tenant", "t1");
  EXPECT_EQ(shareKey(a, kNoExtra), shareKey(b, kNoExtra));  // not listed: not compared
  const std::vector<std::string> tenant{"x-tenant"};
  EXPECT_NE(shareKey(a, tenant), shareKey(b, tenant));
  b.headers.add("X-Tenant", "t1");
  EXPECT_EQ(shareKey(a, tenant), shareKey(b, tenant));
}

TEST(ShareKeyTest, EmptyAndAbsentDifferAndPartsCannotRunTogether) {
  auto a = read("/v1/stream/a?live=sse");
  auto b = read("/v1/stream/a?live=sse");
  a.headers.add("authorization", "");
  EXPECT_NE(shareKey(a, kNoExtra), shareKey(b, kNoExtra));
  // "ab" + "c" against "a" + "bc" in two fields.
  auto c = read("/v1/stream/a?live=sse");
  auto d = read("/v1/stream/a?live=sse");
  c.headers.add("authorization", "ab");
  c.headers.add("cookie", "c");
  d.headers.add("authorization", "a");
  d.headers.add("cookie", "bc");
  EXPECT_NE(shareKey(c, kNoExtra), shareKey(d, kNoExtra));
}

TEST(ShareKeyTest, ReadPositionIsTheDecodedFirstOffsetAndCursor) {
  const ReadPosition p = readPosition("/v1/stream/a?live=sse&offset=0000_12%5F3&cursor=9&offset=1");
  EXPECT_EQ(p.offset, std::optional<std::string>("0000_12_3"));
  EXPECT_EQ(p.cursor, std::optional<std::string>("9"));
  const ReadPosition none = readPosition("/v1/stream/a?live=sse");
  EXPECT_FALSE(none.offset.has_value());
  EXPECT_FALSE(none.cursor.has_value());
  EXPECT_EQ(readPosition("/v1/stream/a?of%66set=now").offset, std::optional<std::string>("now"));
}

}  // namespace
}  // namespace ferry::filters
