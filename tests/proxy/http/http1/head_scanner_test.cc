#include "proxy/http/http1/head_scanner.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <string_view>

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
  for (std::string bad :
       {std::string("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nA: \0\r\n\r\n", 24),
        std::string("GET / HTTP/1.1\rA: b\r\n\r\n"), std::string("GET / HTTP/1.1\nA: b\r\n\r\n"),
        std::string("GET  / HTTP/1.1\r\n\r\n"), std::string("GET / HTTP/1.1 \r\n\r\n"),
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

// What scanning `input` in two pieces, split at `split`, ends with.
struct Outcome {
  HeadScanner::State state;
  size_t consumed;  // head bytes consumed over both pieces (not compared after an error)
  int status;
  bool operator==(const Outcome& other) const {
    return state == other.state && status == other.status &&
           (state == HeadScanner::State::Error || consumed == other.consumed);
  }
};
void PrintTo(const Outcome& o, std::ostream* os) {
  *os << "{state " << static_cast<int>(o.state) << ", consumed " << o.consumed << ", status "
      << o.status << "}";
}

Outcome scanSplit(HeadScanner::Mode mode, uint64_t limit, std::string_view input, size_t split) {
  HeadScanner scanner(mode, limit);
  auto first = scanner.scan(input.substr(0, split));
  size_t consumed = first.consumed;
  HeadScanner::State state = first.state;
  if (state == HeadScanner::State::Scanning) {
    auto second = scanner.scan(input.substr(split));
    consumed += second.consumed;
    state = second.state;
  }
  return {state, consumed, scanner.errorStatus()};
}

// The same outcome whole, split at every offset, and one byte at a time.
void expectSameOutcomeAnyWay(HeadScanner::Mode mode, uint64_t limit, std::string_view input,
                             const Outcome& expected) {
  EXPECT_EQ(scanSplit(mode, limit, input, input.size()), expected) << "whole: " << input;
  for (size_t split = 0; split <= input.size(); ++split) {
    EXPECT_EQ(scanSplit(mode, limit, input, split), expected) << "split " << split << ": " << input;
  }
  HeadScanner scanner(mode, limit);
  Outcome bytewise{HeadScanner::State::Scanning, 0, 0};
  for (char c : input) {
    auto result = scanner.scan(std::string_view(&c, 1));
    bytewise.consumed += result.consumed;
    bytewise.state = result.state;
    if (result.state != HeadScanner::State::Scanning) break;
  }
  bytewise.status = scanner.errorStatus();
  EXPECT_EQ(bytewise, expected) << "byte at a time: " << input;
}

// Field lines longer than a 16-byte block, so the block-wise search crosses block ends.
const std::string kLongRequest =
    "POST /a/rather/long/request/target?with=query HTTP/1.1\r\n"
    "Host: streams.example.internal:8443\r\n"
    "Content-Type: application/octet-stream\r\n"
    "X-Short: 1\r\n"
    "X-Value-With-Spaces: a b\tc  d\r\n"
    "X-Exactly-Sixteen-Byte-Value: 0123456789abcdef\r\n"
    "\r\n";

TEST(HeadScannerTest, LongHeadSameEndWholeSplitAndByteAtATime) {
  const std::string input = kLongRequest + "body bytes\r\n\r\nmore";
  expectSameOutcomeAnyWay(HeadScanner::Mode::Request, 1024, input,
                          {HeadScanner::State::Done, kLongRequest.size(), 0});
  const std::string response =
      "HTTP/1.1 200 OK with a long reason\r\n"
      "Date: Sun, 29 Nov 2026 19:36:32 GMT\r\n"
      "Content-Length: 4\r\n"
      "\r\n";
  expectSameOutcomeAnyWay(HeadScanner::Mode::Response, 1024, response + "abcd",
                          {HeadScanner::State::Done, response.size(), 0});
}

TEST(HeadScannerTest, SpecialByteAtEveryPositionOfAFieldLine) {
  const std::string before = "GET / HTTP/1.1\r\nHost: h\r\n";
  const std::string line = "X-Long-Field-Name: a value that spans several blocks";
  const std::string after = "\r\nA: b\r\n\r\n";
  const Outcome bad{HeadScanner::State::Error, 0, 400};
  for (size_t at = 0; at < line.size(); ++at) {
    for (std::string_view special :
         {std::string_view("\0", 1), std::string_view("\n"), std::string_view("\rx")}) {
      std::string broken = line;
      broken.replace(at, 1, special);
      const std::string input = before + broken + after;
      HeadScanner scanner(HeadScanner::Mode::Request, 1024);
      auto result = scanner.scan(input);
      ASSERT_EQ(result.state, HeadScanner::State::Error) << at << ": " << input;
      EXPECT_EQ(scanner.errorStatus(), 400);
      // Where the error was found does not depend on how the input was cut.
      for (size_t split = 0; split <= input.size(); ++split) {
        EXPECT_EQ(scanSplit(HeadScanner::Mode::Request, 1024, input, split), bad)
            << "at " << at << " split " << split << ": " << input;
      }
    }
  }
}

TEST(HeadScannerTest, BlankOpensAFieldLineOnlyAsObsFold) {
  const std::string head = "GET / HTTP/1.1\r\nHost: h\r\nX-A: 0123456789abcdef0123\r\n";
  for (char blank : {' ', '\t'}) {
    // At the start of a line: obs-fold, refused.
    expectSameOutcomeAnyWay(HeadScanner::Mode::Request, 1024, head + blank + "folded\r\n\r\n",
                            {HeadScanner::State::Error, 0, 400});
    // Inside a line: an ordinary byte.
    const std::string ok = head + "X-B:" + blank + "v" + blank + "w\r\n\r\n";
    expectSameOutcomeAnyWay(HeadScanner::Mode::Request, 1024, ok,
                            {HeadScanner::State::Done, ok.size(), 0});
  }
}

// A request line arriving whole is checked in one piece; one cut anywhere, byte by byte. Both
// refuse a blank where it does not belong: a doubled, leading or trailing SP, or any HTAB.
TEST(HeadScannerTest, RequestLineBlanksWholeSplitAndByteAtATime) {
  const std::string line = "GET /a/rather/long/request/target?q=1 HTTP/1.1";
  const std::string rest = "\r\nHost: h\r\n\r\n";
  expectSameOutcomeAnyWay(HeadScanner::Mode::Request, 1024, line + rest,
                          {HeadScanner::State::Done, line.size() + rest.size(), 0});
  const Outcome bad{HeadScanner::State::Error, 0, 400};
  for (size_t at = 0; at <= line.size(); ++at) {
    std::string extra_space = line;
    extra_space.insert(at, 1, ' ');
    expectSameOutcomeAnyWay(HeadScanner::Mode::Request, 1024, extra_space + rest, bad);
    if (at < line.size()) {
      std::string tab = line;
      tab[at] = '\t';
      expectSameOutcomeAnyWay(HeadScanner::Mode::Request, 1024, tab + rest, bad);
    }
  }
  // Two spaces but in the wrong places, and too few parts.
  for (const char* wrong :
       {"GET  /x\r\n\r\n", " GET /x\r\n\r\n", "GET /x \r\n\r\n", "GET /x\r\n\r\n"}) {
    expectSameOutcomeAnyWay(HeadScanner::Mode::Request, 1024, wrong, bad);
  }
}

TEST(HeadScannerTest, MalformedLineEndsInLongHeads) {
  const Outcome bad{HeadScanner::State::Error, 0, 400};
  const std::string start = "GET / HTTP/1.1\r\nHost: streams.example.internal\r\n";
  for (const std::string& tail : {std::string("X-A: 0123456789abcdef0123\n\r\n"),
                                  std::string("X-A: 0123456789abcdef0123\r\r\n\r\n"),
                                  std::string("X-A: 0123456789abcdef0123\r\n\n"),
                                  std::string("X-A: 0123456789abcdef0123\r\n\r\r\n")}) {
    const std::string input = start + tail;
    HeadScanner whole(HeadScanner::Mode::Request, 1024);
    ASSERT_EQ(whole.scan(input).state, HeadScanner::State::Error) << input;
    for (size_t split = 0; split <= input.size(); ++split) {
      EXPECT_EQ(scanSplit(HeadScanner::Mode::Request, 1024, input, split), bad)
          << "split " << split << ": " << input;
    }
  }
}

TEST(HeadScannerTest, LimitHoldsInsideLongLines) {
  // The limit falls inside, at the end of and after every line: exactly the head's size
  // passes, one byte less is 431 however the input is cut.
  for (uint64_t limit = 1; limit < kLongRequest.size(); ++limit) {
    HeadScanner scanner(HeadScanner::Mode::Request, limit);
    auto result = scanner.scan(kLongRequest);
    ASSERT_EQ(result.state, HeadScanner::State::Error) << limit;
    EXPECT_EQ(scanner.errorStatus(), 431) << limit;
  }
  const uint64_t exact = kLongRequest.size();
  expectSameOutcomeAnyWay(HeadScanner::Mode::Request, exact, kLongRequest,
                          {HeadScanner::State::Done, kLongRequest.size(), 0});
  const std::string input = kLongRequest;
  for (size_t split = 0; split <= input.size(); ++split) {
    EXPECT_EQ(scanSplit(HeadScanner::Mode::Request, exact - 1, input, split),
              (Outcome{HeadScanner::State::Error, 0, 431}))
        << "split " << split;
  }
}

}  // namespace
}  // namespace ferry::http::http1
