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

// equalsIgnoreCase compares 8 bytes at a time; check it against a byte-by-byte reference at
// every length around the word sizes, for letters, the non-letters next to them in ASCII
// ('@' / '`', '[' / '{', '^' / '~' differ by the case bit too) and bytes above 0x7f.
TEST(HeaderMapTest, EqualsIgnoreCaseMatchesBytewiseReference) {
  auto lower = [](unsigned char c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; };
  auto reference = [&](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (lower(static_cast<unsigned char>(a[i])) != lower(static_cast<unsigned char>(b[i]))) {
        return false;
      }
    }
    return true;
  };
  const std::string pairs[][2] = {{"a", "A"}, {"z", "Z"}, {"m", "M"}, {"@", "`"}, {"[", "{"},
                                  {"^", "~"}, {"\xc1", "\xe1"}, {"-", "-"}, {"0", "0"},
                                  {"\xda", "\xfa"}, {"a", "b"}};
  for (size_t size = 1; size <= 20; ++size) {
    for (size_t at = 0; at < size; ++at) {
      for (const auto& pair : pairs) {
        std::string a(size, 'x');
        std::string b(size, 'X');
        a[at] = pair[0][0];
        b[at] = pair[1][0];
        EXPECT_EQ(equalsIgnoreCase(a, b), reference(a, b)) << size << " " << at << " " << pair[0];
        EXPECT_EQ(equalsIgnoreCase(b, a), reference(b, a)) << size << " " << at << " " << pair[0];
      }
    }
  }
  EXPECT_TRUE(equalsIgnoreCase("Transfer-Encoding", "transfer-encoding"));
  EXPECT_FALSE(equalsIgnoreCase("Transfer-Encoding", "transfer-encodinG!"));
  EXPECT_FALSE(equalsIgnoreCase("transfer-encodinx", "transfer-encoding"));
}

// The wire-safe mark survives removals and is cleared by anything that adds a value.
TEST(HeaderMapTest, WireSafeMarkClearedByAddAndSet) {
  HeaderMap headers;
  EXPECT_FALSE(headers.wireSafe());
  headers.add("a", "1");
  headers.add("b", "2");
  headers.markWireSafe();
  headers.remove("a");
  headers.removeIf([](const HeaderField& f) { return f.name == "zz"; });
  EXPECT_TRUE(headers.wireSafe());
  HeaderMap moved = std::move(headers);
  EXPECT_TRUE(moved.wireSafe());
  moved.set("b", "3");
  EXPECT_FALSE(moved.wireSafe());
  moved.markWireSafe();
  moved.add("c", "4");
  EXPECT_FALSE(moved.wireSafe());
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
