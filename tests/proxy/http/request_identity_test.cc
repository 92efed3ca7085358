#include "proxy/http/request_identity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>

namespace ferry::http {
namespace {

TEST(RequestIdentityTest, ValidIds) {
  EXPECT_TRUE(isValidRequestId("a"));
  EXPECT_TRUE(isValidRequestId(std::string(kMaxRequestIdBytes, '~')));
  EXPECT_FALSE(isValidRequestId(""));
  EXPECT_FALSE(isValidRequestId(std::string(kMaxRequestIdBytes + 1, 'a')));
  EXPECT_FALSE(isValidRequestId("a b"));
  EXPECT_FALSE(isValidRequestId("a\tb"));
  EXPECT_FALSE(isValidRequestId("caf\xc3\xa9"));
}

TEST(RequestIdentityTest, GeneratedIdsAreDistinctAndValid) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = generateRequestId();
    EXPECT_EQ(id.size(), 32u);
    EXPECT_TRUE(isValidRequestId(id));
    EXPECT_TRUE(seen.insert(id).second) << id;
  }
}

// An id is 16 hex digits fixed per thread, then a counter's 16: lowercase hex throughout, and
// the counter's digits read back as consecutive numbers (every digit value 0-f comes by).
TEST(RequestIdentityTest, GeneratedIdsAreAPrefixAndACounterInLowerHex) {
  const std::string first = generateRequestId();
  const uint64_t start = std::stoull(first.substr(16), nullptr, 16);
  for (uint64_t i = 0; i < 600; ++i) {
    const std::string id = i == 0 ? first : generateRequestId();
    ASSERT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    EXPECT_EQ(id.substr(0, 16), first.substr(0, 16));
    char expected[17];
    std::snprintf(expected, sizeof(expected), "%016llx",
                  static_cast<unsigned long long>(start + i));
    EXPECT_EQ(id.substr(16), expected);
  }
}

TEST(RequestIdentityTest, AddressWithoutPort) {
  EXPECT_EQ(addressWithoutPort("127.0.0.1:5555"), "127.0.0.1");
  EXPECT_EQ(addressWithoutPort("[::1]:5555"), "::1");
  EXPECT_EQ(addressWithoutPort(""), "");
}

TEST(RequestIdentityTest, MultipleRequestIdsAreReplaced) {
  RequestHeaders r;
  r.headers.add("x-request-id", "a");
  r.headers.add("x-request-id", "b");
  applyRequestIdentity(r, {}, "10.0.0.9:1", true);
  EXPECT_EQ(r.headers.count("x-request-id"), 1u);
  EXPECT_EQ(r.headers.get("x-request-id")->size(), 32u);
  EXPECT_EQ(r.headers.get("x-forwarded-for"), "10.0.0.9");
  EXPECT_EQ(r.headers.get("x-forwarded-proto"), "https");
}

TEST(RequestIdentityTest, TrustedHopsAcrossSeveralFields) {
  RequestHeaders r;
  r.headers.add("X-Forwarded-For", "1.1.1.1, 2.2.2.2");
  r.headers.add("X-Forwarded-For", "3.3.3.3");
  applyRequestIdentity(r, {true, 2}, "[::1]:80", false);
  EXPECT_EQ(r.headers.get("x-forwarded-for"), "2.2.2.2, 3.3.3.3, ::1");
  EXPECT_EQ(r.headers.count("x-forwarded-for"), 1u);
  EXPECT_EQ(r.headers.get("x-forwarded-proto"), "http");  // none was sent: ferry's own
}

TEST(RequestIdentityTest, AParsedHeadStaysWireSafe) {
  RequestHeaders r;
  r.headers.add("host", "x");
  r.headers.markWireSafe();
  applyRequestIdentity(r, {}, "127.0.0.1:1", false);
  EXPECT_TRUE(r.headers.wireSafe());
}

}  // namespace
}  // namespace ferry::http
