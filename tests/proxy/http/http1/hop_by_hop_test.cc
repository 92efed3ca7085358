#include "proxy/http/http1/hop_by_hop.h"

#include <gtest/gtest.h>

namespace ferry::http::http1 {
namespace {

TEST(HopByHopTest, ConnectionTokensLowercasedAcrossFields) {
  HeaderMap headers;
  headers.add("Connection", " Keep-Alive , X-A,,");
  headers.add("connection", "X-B");
  EXPECT_EQ(connectionTokens(headers), (std::vector<std::string>{"keep-alive", "x-a", "x-b"}));
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
  std::vector<std::string> tokens = {"x-a"};
  EXPECT_TRUE(isHopByHop("Upgrade", tokens));
  EXPECT_TRUE(isHopByHop("X-A", tokens));
  EXPECT_FALSE(isHopByHop("X-B", tokens));
  EXPECT_FALSE(isHopByHop("Content-Length", {"content-length"}));
}

}  // namespace
}  // namespace ferry::http::http1
