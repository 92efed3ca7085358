// Parser: field names and values reach the HeaderMap intact however the input is cut, even
// when the caller reuses the memory of earlier input (a name or value cut by the end of one
// execute() call is copied before the call returns).

#include "proxy/http/http1/parser.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace ferry::http::http1 {
namespace {

const std::string kRequest =
    "GET /path HTTP/1.1\r\n"
    "Host: streams.example.internal:8443\r\n"
    "X-Long-Name-That-Crosses-Blocks: a value with  inner  spaces\r\n"
    "X-Empty:\r\n"
    "X-Trimmed: \t padded \t \r\n"
    "\r\n";

void expectFields(const HeaderMap& fields) {
  ASSERT_EQ(fields.size(), 4u);
  EXPECT_EQ(fields.fields()[0].name, "Host");
  EXPECT_EQ(fields.fields()[0].value, "streams.example.internal:8443");
  EXPECT_EQ(fields.fields()[1].name, "X-Long-Name-That-Crosses-Blocks");
  EXPECT_EQ(fields.fields()[1].value, "a value with  inner  spaces");
  EXPECT_EQ(fields.fields()[2].name, "X-Empty");
  EXPECT_EQ(fields.fields()[2].value, "");
  EXPECT_EQ(fields.fields()[3].name, "X-Trimmed");
  EXPECT_EQ(fields.fields()[3].value, "padded");
}

// Feeds `pieces` one after another through the same scratch memory, overwritten after each
// call, as a connection's input buffer is once its bytes were drained.
Parser::Result feed(Parser& parser, const std::vector<std::string_view>& pieces) {
  std::string scratch;
  Parser::Result result;
  for (std::string_view piece : pieces) {
    scratch.assign(piece);
    std::string_view rest = scratch;
    while (!rest.empty()) {
      result = parser.execute(rest);
      EXPECT_FALSE(result.error) << parser.errorDetail();
      if (result.error || result.head_complete || result.message_complete) break;
      rest.remove_prefix(result.consumed);
    }
    scratch.assign(scratch.size(), '#');
    if (result.error || result.message_complete) break;
  }
  return result;
}

TEST(ParserTest, FieldsWhole) {
  Parser parser(HTTP_REQUEST, 4096);
  auto result = feed(parser, {kRequest});
  EXPECT_TRUE(result.message_complete);
  expectFields(parser.fields());
  EXPECT_EQ(parser.target(), "/path");
}

TEST(ParserTest, FieldsSplitAtEveryOffset) {
  for (size_t split = 1; split < kRequest.size(); ++split) {
    Parser parser(HTTP_REQUEST, 4096);
    const std::string_view all = kRequest;
    auto result = feed(parser, {all.substr(0, split), all.substr(split)});
    EXPECT_TRUE(result.message_complete) << split;
    expectFields(parser.fields());
    EXPECT_EQ(parser.target(), "/path") << split;
  }
}

TEST(ParserTest, FieldsByteAtATime) {
  Parser parser(HTTP_REQUEST, 4096);
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < kRequest.size(); ++i)
    bytes.push_back(std::string_view(kRequest).substr(i, 1));
  auto result = feed(parser, bytes);
  EXPECT_TRUE(result.message_complete);
  expectFields(parser.fields());
}

TEST(ParserTest, SecondMessageStartsWithEmptyNameAndValue) {
  // What a split name or value left behind must not leak into the next message.
  Parser parser(HTTP_REQUEST, 4096);
  const std::string_view all = kRequest;
  ASSERT_TRUE(feed(parser, {all.substr(0, 40), all.substr(40)}).message_complete);
  const std::string second = "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n";
  ASSERT_TRUE(feed(parser, {second}).message_complete);
  ASSERT_EQ(parser.fields().size(), 1u);
  EXPECT_EQ(parser.fields().fields()[0].name, "Host");
  EXPECT_EQ(parser.fields().fields()[0].value, "h");
}

}  // namespace
}  // namespace ferry::http::http1

namespace ferry::http::http1 {
namespace {

// Issue #10: no leniency flag of llhttp is on, and the strict half of llhttp.c is compiled.
TEST(ParserTest, StrictBuildWithoutLenientFlags) {
  EXPECT_EQ(LLHTTP_STRICT_MODE, 1);
  for (llhttp_type_t type : {HTTP_REQUEST, HTTP_RESPONSE}) {
    Parser parser(type, 4096);
    EXPECT_EQ(parser.raw().lenient_flags, 0);
  }
}

// Issue #10: an empty input (whose data() may be null) is not handed to llhttp as a null
// pointer; a paused parser still completes nothing and reports no error.
TEST(ParserTest, EmptyInputIsHarmless) {
  Parser parser(HTTP_REQUEST, 4096);
  auto result = parser.execute(std::string_view());
  EXPECT_FALSE(result.error);
  EXPECT_EQ(result.consumed, 0u);
  Buffer empty;
  result = parser.execute(empty);
  EXPECT_FALSE(result.error);
  result = feed(parser, {"GET / HTTP/1.1\r\nHost: h\r\n\r\n"});
  EXPECT_TRUE(result.message_complete);
  result = parser.execute(std::string_view());
  EXPECT_FALSE(result.error);
}

}  // namespace
}  // namespace ferry::http::http1
