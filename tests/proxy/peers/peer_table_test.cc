#include "proxy/peers/peer_table.h"

#include <gtest/gtest.h>

#include <string>

namespace ferry::peers {
namespace {

TEST(InstanceNameTest, AcceptsTokens) {
  EXPECT_TRUE(isValidInstanceName("streams-1"));
  EXPECT_TRUE(isValidInstanceName("inst-a"));
  EXPECT_TRUE(isValidInstanceName("a"));
  EXPECT_TRUE(isValidInstanceName("A.b_c~d!#$%&'*+^`|9"));
  EXPECT_TRUE(isValidInstanceName(std::string(kMaxInstanceNameLength, 'x')));
}

TEST(InstanceNameTest, RejectsNonTokens) {
  EXPECT_FALSE(isValidInstanceName(""));
  EXPECT_FALSE(isValidInstanceName(std::string(kMaxInstanceNameLength + 1, 'x')));
  for (const char* bad : {"a b", "a/b", "a:b", "a@b", "a,b", "a\"b", "a\tb", "(a)", "a=b", "a;b",
                          "{a}", "[a]", "a\\b", "a?b", "é"}) {
    EXPECT_FALSE(isValidInstanceName(bad)) << bad;
  }
  EXPECT_FALSE(isValidInstanceName(std::string("a\0b", 3)));
}

TEST(PeerOriginTest, OriginAlwaysWritesThePort) {
  EXPECT_EQ((PeerOrigin{"http", "127.0.0.1", 8081}).origin(), "http://127.0.0.1:8081");
  EXPECT_EQ((PeerOrigin{"https", "a.example", 443}).origin(), "https://a.example:443");
  EXPECT_EQ((PeerOrigin{"https", "::1", 8443}).origin(), "https://[::1]:8443");
  EXPECT_EQ((PeerOrigin{"https", "::1", 8443}).authority(), "[::1]:8443");
  EXPECT_EQ((PeerOrigin{"https", "a.example", 8443}).authority(), "a.example:8443");
  EXPECT_TRUE((PeerOrigin{"https", "a", 1}).isHttps());
  EXPECT_FALSE((PeerOrigin{"http", "a", 1}).isHttps());
}

TEST(PeerTableTest, FindsPeersByName) {
  std::map<std::string, PeerOrigin> peers{{"inst-1", {"https", "10.0.0.1", 8443}},
                                          {"inst-2", {"https", "10.0.0.2", 8443}}};
  const PeerTableSharedPtr table = std::make_shared<const PeerTable>(peers, 7);
  EXPECT_EQ(table->size(), 2u);
  EXPECT_EQ(table->version(), 7u);
  EXPECT_EQ(table->peers(), peers);
  const PeerOrigin* found = table->find("inst-2");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->origin(), "https://10.0.0.2:8443");
  EXPECT_EQ(table->find("inst-3"), nullptr);
  EXPECT_EQ(table->find(""), nullptr);
  EXPECT_EQ(table->find("INST-1"), nullptr);  // names are case-sensitive
}

TEST(PeerTableTest, EmptyTable) {
  PeerTable table({}, 0);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.find("inst-1"), nullptr);
}

}  // namespace
}  // namespace ferry::peers
