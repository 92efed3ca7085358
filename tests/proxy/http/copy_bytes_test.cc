// Tests proxy/http/copy_bytes.h: every length copies exactly its bytes, none around them.
#include "proxy/http/copy_bytes.h"

#include <gtest/gtest.h>

#include <string>

namespace ferry::http {
namespace {

TEST(CopyBytesTest, CopiesEveryLengthExactly) {
  std::string source;
  for (int i = 0; i < 64; ++i) source.push_back(static_cast<char>('A' + i % 26));
  for (size_t n = 0; n <= 40; ++n) {
    for (size_t at = 0; at < 3; ++at) {
      std::string target(64, '.');
      copyBytes(target.data() + 8 + at, source.data() + at, n);
      const std::string expected =
          std::string(8 + at, '.') + source.substr(at, n) + std::string(64 - 8 - at - n, '.');
      EXPECT_EQ(target, expected) << n << " " << at;
    }
  }
}

}  // namespace
}  // namespace ferry::http
