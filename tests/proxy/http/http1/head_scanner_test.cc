#include "proxy/http/http1/head_scanner.h"

#include <gtest/gtest.h>

namespace ferry::http::http1 {
namespace {

TEST(HeadScannerTest, FindsEndOfHeadAndStopsThere) {
  HeadScanner scanner(HeadScanner::Mode::Request, 1024);
  const std::string head = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
  auto result = scanner.scan(head + "body");
  EXPECT_EQ(result.state, HeadScanner::State::Done);
  EXPECT_EQ(result.consumed, head.size());
  EXPECT_TRUE(scanner.done());
}

TEST(HeadScannerTest, ByteAtATimeFindsSameEnd) {
  HeadScanner scanner(HeadScanner::Mode::Request, 1024);
  const std::string head = "\r\nPOST /x HTTP/1.1\r\nA: b\r\n\r\n";
  size_t total = 0;
  for (char c : head) {
    auto result = scanner.scan(std::string_view(&c, 1));
    ASSERT_NE(result.state, HeadScanner::State::Error);
    total += result.consumed;
  }
  EXPECT_TRUE(scanner.done());
  EXPECT_EQ(total, head.size());
}

TEST(HeadScannerTest, StartedOnlyAfterLeadingEmptyLines) {
  HeadScanner scanner(HeadScanner::Mode::Request, 1024);
  scanner.scan("\r\n\r\n");
  EXPECT_FALSE(scanner.started());
  scanner.scan("G");
  EXPECT_TRUE(scanner.started());
  scanner.reset();
  EXPECT_FALSE(scanner.started());
}

TEST(HeadScannerTest, LimitCountsRawBytes) {
  HeadScanner scanner(HeadScanner::Mode::Request, 10);
  EXPECT_EQ(scanner.scan("GET / HTTP").state, HeadScanner::State::Scanning);
  EXPECT_EQ(scanner.scan("/").state, HeadScanner::State::Error);
  EXPECT_EQ(scanner.errorStatus(), 431);
}

TEST(HeadScannerTest, Rejections) {
  for (std::string bad : {std::string("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n"),
                          std::string("GET / HTTP/1.1\r\nA: \0\r\n\r\n", 24),
                          std::string("GET / HTTP/1.1\rA: b\r\n\r\n"),
                          std::string("GET / HTTP/1.1\nA: b\r\n\r\n"),
                          std::string("GET  / HTTP/1.1\r\n\r\n"),
                          std::string("GET / HTTP/1.1 \r\n\r\n"),
                          std::string("GET /\r\n\r\n")}) {
    HeadScanner scanner(HeadScanner::Mode::Request, 1024);
    EXPECT_EQ(scanner.scan(bad).state, HeadScanner::State::Error) << bad;
    EXPECT_EQ(scanner.errorStatus(), 400);
  }
}

TEST(HeadScannerTest, ResponseStatusLineNeedsNoTwoSpaces) {
  HeadScanner scanner(HeadScanner::Mode::Response, 1024);
  EXPECT_EQ(scanner.scan("HTTP/1.1 200\r\n\r\n").state, HeadScanner::State::Done);
  HeadScanner scanner2(HeadScanner::Mode::Response, 1024);
  EXPECT_EQ(scanner2.scan("HTTP/1.1 200 Very OK\r\n\r\n").state, HeadScanner::State::Done);
}

}  // namespace
}  // namespace ferry::http::http1
