#include "proxy/http/http1/body_writer.h"

#include <gtest/gtest.h>

namespace ferry::http::http1 {
namespace {

uint64_t write(BodyWriter& writer, Buffer& output, std::string_view bytes, bool end_stream) {
  Buffer data;
  data.add(bytes);
  uint64_t n = writer.write(output, data, end_stream);
  EXPECT_TRUE(data.empty());
  return n;
}

TEST(BodyWriterTest, ChunkedFramingAndByteCount) {
  BodyWriter writer;
  Buffer output;
  writer.start(BodyFraming::Chunked);
  EXPECT_EQ(write(writer, output, std::string(255, 'a'), false), 2u + 2u + 255u + 2u);
  EXPECT_EQ(output.toString().substr(0, 4), "ff\r\n");
  output.clear();
  EXPECT_EQ(write(writer, output, "", true), 5u);
  EXPECT_EQ(output.toString(), "0\r\n\r\n");
  EXPECT_TRUE(writer.done());
  EXPECT_EQ(write(writer, output, "late", true), 0u);
  EXPECT_EQ(output.toString(), "0\r\n\r\n");
}

TEST(BodyWriterTest, LengthAndCloseDelimitedPassThrough) {
  for (BodyFraming framing : {BodyFraming::ContentLength, BodyFraming::CloseDelimited}) {
    BodyWriter writer;
    Buffer output;
    writer.start(framing);
    EXPECT_EQ(write(writer, output, "abc", false), 3u);
    EXPECT_EQ(write(writer, output, "d", true), 1u);
    EXPECT_EQ(output.toString(), "abcd");
  }
}

TEST(BodyWriterTest, NoneDropsBytes) {
  BodyWriter writer;
  Buffer output;
  writer.start(BodyFraming::None);
  EXPECT_EQ(write(writer, output, "abc", true), 0u);
  EXPECT_TRUE(output.empty());
}

}  // namespace
}  // namespace ferry::http::http1
