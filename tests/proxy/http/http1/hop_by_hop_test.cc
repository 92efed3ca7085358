#include "proxy/http/http1/hop_by_hop.h"

#include <gtest/gtest.h>

namespace ferry::http::http1 {
namespace {

TEST(HopByHopTest, ConnectionOptionsJoinEveryConnectionField) {
  HeaderMap headers;
  headers.add("Connection", " Keep-Alive , X-A,,");
  headers.add("Host", "h");
  headers.add("connection", "X-B");
  EXPECT_EQ(connectionOptions(headers), " Keep-Alive , X-A,,,X-B");
  EXPECT_EQ(connectionOptions(HeaderMap()), "");
}

TEST(HopByHopTest, OptionsCompareIgnoringCaseAndWhitespace) {
  const std::string options = " Keep-Alive , X-A,,,X-B";
  EXPECT_TRUE(isHopByHop("keep-alive", options));
  EXPECT_TRUE(isHopByHop("x-a", options));
  EXPECT_TRUE(isHopByHop("X-b", options));
  EXPECT_FALSE(isHopByHop("X", options));
  EXPECT_FALSE(isHopByHop("X-A,", options));
  EXPECT_FALSE(isHopByHop("", options));
  EXPECT_FALSE(isHopByHop("Keep", options));
}

TEST(HopByHopTest, RemovesFixedListAndNominatedFieldsOnly) {
  HeaderMap headers;
  headers.add("Host", "h");
  headers.add("Connection", "x-a, content-length");
  headers.add("X-A", "1");
  headers.add("x-a", "2");
  headers.add("TE", "trailers");
  headers.add("Content-Length", "3");
  headers.add("X-B", "keep");
  removeHopByHopFields(headers);
  ASSERT_EQ(headers.size(), 3u);
  EXPECT_EQ(headers.fields()[0].name, "Host");
  EXPECT_EQ(headers.fields()[1].name, "Content-Length");
  EXPECT_EQ(headers.fields()[2].name, "X-B");
}

TEST(HopByHopTest, IsHopByHop) {
  EXPECT_TRUE(isHopByHop("Upgrade", ""));
  EXPECT_TRUE(isHopByHop("X-A", "x-a"));
  EXPECT_FALSE(isHopByHop("X-B", "x-a"));
  EXPECT_FALSE(isHopByHop("Content-Length", "content-length"));
}

TEST(HopByHopTest, RemovesEveryCaseOfANominatedNameAndKeepsOrder) {
  HeaderMap headers;
  headers.add("A", "1");
  headers.add("x-gone", "2");
  headers.add("B", "3");
  headers.add("CONNECTION", "X-Gone");
  headers.add("X-GONE", "4");
  headers.add("C", "5");
  removeHopByHopFields(headers);
  ASSERT_EQ(headers.size(), 3u);
  EXPECT_EQ(headers.fields()[0].value, "1");
  EXPECT_EQ(headers.fields()[1].value, "3");
  EXPECT_EQ(headers.fields()[2].value, "5");
}

// A Connection field that names only fields of the fixed list takes a shorter path; it must
// remove exactly what the general one does.
TEST(HopByHopTest, ConnectionNamingOnlyFixedFieldsRemovesTheFixedList) {
  HeaderMap headers;
  headers.add("Host", "h");
  headers.add("Connection", " Keep-Alive ,, te");
  headers.add("Keep-Alive", "timeout=5");
  headers.add("TE", "trailers");
  headers.add("X-A", "1");
  headers.add("Close", "2");
  removeHopByHopFields(headers);
  ASSERT_EQ(headers.size(), 3u);
  EXPECT_EQ(headers.fields()[0].name, "Host");
  EXPECT_EQ(headers.fields()[1].name, "X-A");
  EXPECT_EQ(headers.fields()[2].name, "Close");
}

TEST(HopByHopTest, AnyConnectionFieldNamingAnotherFieldRemovesIt) {
  HeaderMap headers;
  headers.add("Connection", "close");
  headers.add("Close", "1");
  headers.add("X", "2");
  removeHopByHopFields(headers);
  ASSERT_EQ(headers.size(), 1u);
  EXPECT_EQ(headers.fields()[0].name, "X");

  HeaderMap two;
  two.add("Connection", "keep-alive");
  two.add("X-A", "1");
  two.add("CONNECTION", "x-a");
  two.add("X", "2");
  removeHopByHopFields(two);
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two.fields()[0].name, "X");
}

}  // namespace
}  // namespace ferry::http::http1
