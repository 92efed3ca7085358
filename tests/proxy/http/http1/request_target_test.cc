// Tests proxy/http/http1/request_target.cc: which bytes a Host's reg-name may hold.
#include "proxy/http/http1/request_target.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace ferry::http::http1 {
namespace {

// reg-name = *( unreserved / pct-encoded / sub-delims ) (RFC 3986 §3.2.2): every byte value
// in the middle of a name, against the RFC's lists.
TEST(RequestTargetTest, HostRegNameHoldsUnreservedAndSubDelimsOnly) {
  constexpr std::string_view kUnreserved = "-._~";
  constexpr std::string_view kSubDelims = "!$&'()*+,;=";
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    const bool expected = alnum || kUnreserved.find(ch) != std::string_view::npos ||
                          kSubDelims.find(ch) != std::string_view::npos;
    const std::string host = std::string("a") + ch + "b";
    EXPECT_EQ(isValidHost(host), expected) << c;
    EXPECT_EQ(isValidHost(host + ":8080"), expected) << c;
  }
  EXPECT_TRUE(isValidHost("a%2Db"));
  EXPECT_TRUE(isValidHost("[::1]:80"));
}

}  // namespace
}  // namespace ferry::http::http1
