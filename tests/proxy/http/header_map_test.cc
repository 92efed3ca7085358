#include "proxy/http/header_map.h"

#include <gtest/gtest.h>

namespace ferry::http {
namespace {

TEST(HeaderMapTest, GetIgnoresCaseAndReturnsFirstValue) {
  HeaderMap map;
  map.add("Content-Type", "text/plain");
  map.add("X-Multi", "one");
  map.add("x-multi", "two");
  EXPECT_EQ(map.get("content-type"), "text/plain");
  EXPECT_EQ(map.get("X-MULTI"), "one");
  EXPECT_FALSE(map.get("missing").has_value());
  EXPECT_TRUE(map.has("CONTENT-TYPE"));
  EXPECT_FALSE(map.has("content"));
  EXPECT_EQ(map.count("x-multi"), 2u);
  EXPECT_EQ(map.count("nope"), 0u);
}

TEST(HeaderMapTest, AddKeepsArrivalOrderAndNameCase) {
  HeaderMap map;
  map.add("B", "1");
  map.add("a", "2");
  map.add("B", "3");
  ASSERT_EQ(map.size(), 3u);
  EXPECT_EQ(map.fields()[0].name, "B");
  EXPECT_EQ(map.fields()[1].name, "a");
  EXPECT_EQ(map.fields()[2].value, "3");
}

TEST(HeaderMapTest, SetReplacesAllInPlaceOfFirst) {
  HeaderMap map;
  map.add("First", "f");
  map.add("Via", "1");
  map.add("Middle", "m");
  map.add("via", "2");
  map.set("VIA", "3");
  ASSERT_EQ(map.size(), 3u);
  EXPECT_EQ(map.fields()[1].name, "Via");
  EXPECT_EQ(map.fields()[1].value, "3");
  EXPECT_EQ(map.fields()[2].name, "Middle");
  EXPECT_EQ(map.count("via"), 1u);
}

TEST(HeaderMapTest, SetAddsWhenAbsent) {
  HeaderMap map;
  map.set("New", "v");
  ASSERT_EQ(map.size(), 1u);
  EXPECT_EQ(map.get("new"), "v");
}

TEST(HeaderMapTest, RemoveReturnsCount) {
  HeaderMap map;
  map.add("A", "1");
  map.add("b", "2");
  map.add("a", "3");
  EXPECT_EQ(map.remove("A"), 2u);
  EXPECT_EQ(map.remove("A"), 0u);
  ASSERT_EQ(map.size(), 1u);
  EXPECT_EQ(map.fields()[0].name, "b");
}

TEST(HeaderMapTest, EqualsIgnoreCase) {
  EXPECT_TRUE(equalsIgnoreCase("Content-Length", "content-LENGTH"));
  EXPECT_FALSE(equalsIgnoreCase("content-length", "content-lengt"));
  EXPECT_FALSE(equalsIgnoreCase("a-b", "a_b"));
  EXPECT_TRUE(equalsIgnoreCase("", ""));
}

TEST(HeaderMapTest, ReasonPhrase) {
  EXPECT_EQ(reasonPhrase(200), "OK");
  EXPECT_EQ(reasonPhrase(409), "Conflict");
  EXPECT_EQ(reasonPhrase(431), "Request Header Fields Too Large");
  EXPECT_EQ(reasonPhrase(100), "Continue");
  EXPECT_EQ(reasonPhrase(799), "");
}

TEST(HeaderMapTest, HopByHopList) {
  for (const char* name : {"Connection", "keep-alive", "Proxy-Connection", "TE", "Trailer",
                           "transfer-encoding", "UPGRADE"}) {
    EXPECT_TRUE(isHopByHopHeader(name)) << name;
  }
  for (const char* name : {"Content-Length", "Host", "Expect", "Trailers", "Tee"}) {
    EXPECT_FALSE(isHopByHopHeader(name)) << name;
  }
}

}  // namespace
}  // namespace ferry::http
