#include "proxy/http/request_identity.h"

#include <gtest/gtest.h>

#include <set>

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
