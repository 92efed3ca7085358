#include "proxy/http/header_map.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

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
  const std::string pairs[][2] = {{"a", "A"}, {"z", "Z"},       {"m", "M"},       {"@", "`"},
                                  {"[", "{"}, {"^", "~"},       {"\xc1", "\xe1"}, {"-", "-"},
                                  {"0", "0"}, {"\xda", "\xfa"}, {"a", "b"}};
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

// A name looked up in lower case (the usual literal) is compared with only the stored name
// lowered; one with an upper-case letter takes the two-sided compare. Both must agree with a
// byte-by-byte reference for get, count and remove.
TEST(HeaderMapTest, LookupsMatchBytewiseReference) {
  auto lower = [](unsigned char c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; };
  auto reference = [&](std::string_view a, std::string_view b) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (lower(static_cast<unsigned char>(a[i])) != lower(static_cast<unsigned char>(b[i]))) {
        return false;
      }
    }
    return true;
  };
  const std::string pairs[][2] = {{"A", "a"},       {"z", "z"}, {"Z", "z"}, {"@", "`"},
                                  {"[", "{"},       {"^", "~"}, {"-", "-"}, {"\xc1", "\xe1"},
                                  {"\xda", "\xfa"}, {"a", "b"}, {"A", "B"}};
  for (size_t size = 1; size <= 20; ++size) {
    for (size_t at = 0; at < size; ++at) {
      for (const auto& pair : pairs) {
        std::string stored(size, 'X');
        std::string query(size, 'x');
        stored[at] = pair[0][0];
        query[at] = pair[1][0];
        const bool expected = reference(stored, query);
        HeaderMap map;
        map.add("other", "o");
        map.add(stored, "v");
        EXPECT_EQ(map.get(query).has_value(), expected) << size << " " << at << " " << pair[0];
        EXPECT_EQ(map.count(query), expected ? 1u : 0u) << size << " " << at << " " << pair[0];
        std::string mixed = query;
        if (mixed[0] >= 'a' && mixed[0] <= 'z') mixed[0] = static_cast<char>(mixed[0] - 32);
        EXPECT_EQ(map.get(mixed).has_value(), expected) << size << " " << at << " " << pair[0];
        EXPECT_EQ(map.remove(query), expected ? 1u : 0u) << size << " " << at << " " << pair[0];
      }
    }
  }
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

// The first fields live inside the map; past its inline room (16 fields, 512 bytes) they move to
// the heap. Every field must read back the same on both sides of that line, in order.
TEST(HeaderMapTest, ManyAndLongFieldsReadBackInOrder) {
  HeaderMap map;
  std::vector<std::pair<std::string, std::string>> expected;
  for (int i = 0; i < 40; ++i) {
    std::string name = "x-field-" + std::to_string(i);
    std::string value(static_cast<size_t>(i * 7), static_cast<char>('a' + i % 26));
    map.add(name, value);
    expected.emplace_back(name, value);
  }
  ASSERT_EQ(map.size(), expected.size());
  size_t i = 0;
  for (const HeaderField& field : map.fields()) {
    EXPECT_EQ(field.name, expected[i].first);
    EXPECT_EQ(field.value, expected[i].second);
    ++i;
  }
  EXPECT_EQ(map.get("X-FIELD-39"), expected[39].second);
}

// add() and set() copy their arguments; these may be views into the map itself, also when the
// copy is what moves the map's bytes to the heap.
TEST(HeaderMapTest, AddAndSetAcceptViewsIntoTheMapItself) {
  HeaderMap map;
  map.add("x-original", "a value that is copied from the map into the map");
  for (int i = 0; i < 30; ++i) {
    const HeaderField first = map.fields()[0];
    map.add(first.name, first.value);
  }
  ASSERT_EQ(map.size(), 31u);
  for (const HeaderField& field : map.fields()) {
    EXPECT_EQ(field.name, "x-original");
    EXPECT_EQ(field.value, "a value that is copied from the map into the map");
  }
  map.add("x-target", "t");
  map.set("x-target", *map.get("x-original"));
  EXPECT_EQ(map.get("x-target"), "a value that is copied from the map into the map");
}

// Copies and moves carry every field (inline or on the heap) and leave the source usable.
TEST(HeaderMapTest, CopyAndMoveKeepFields) {
  for (int fields : {2, 40}) {
    HeaderMap map;
    for (int i = 0; i < fields; ++i) map.add("n" + std::to_string(i), "v" + std::to_string(i));
    map.markWireSafe();
    HeaderMap copy = map;
    HeaderMap moved = std::move(map);
    for (const HeaderMap* m : {&copy, &moved}) {
      ASSERT_EQ(m->size(), static_cast<size_t>(fields));
      EXPECT_EQ(m->get("n1"), "v1");
      EXPECT_EQ(m->fields().back().value, "v" + std::to_string(fields - 1));
      EXPECT_TRUE(m->wireSafe());
    }
    map.clear();
    map.add("after", "move");
    EXPECT_EQ(map.size(), 1u);
    EXPECT_EQ(map.get("after"), "move");
    copy = moved;
    EXPECT_EQ(copy.size(), static_cast<size_t>(fields));
    copy.clear();
    EXPECT_EQ(copy.size(), 0u);
    EXPECT_FALSE(copy.get("n1").has_value());
  }
}

// set() replaces in place and drops later duplicates, also after removals left holes.
TEST(HeaderMapTest, SetAfterRemoveKeepsOrder) {
  HeaderMap map;
  map.add("a", "1");
  map.add("drop", "x");
  map.add("b", "2");
  map.add("B", "3");
  EXPECT_EQ(map.remove("drop"), 1u);
  map.set("b", "new");
  ASSERT_EQ(map.size(), 2u);
  EXPECT_EQ(map.fields()[0].value, "1");
  EXPECT_EQ(map.fields()[1].name, "b");
  EXPECT_EQ(map.fields()[1].value, "new");
}

}  // namespace
}  // namespace ferry::http
