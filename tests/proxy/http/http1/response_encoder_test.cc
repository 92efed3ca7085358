#include "proxy/http/http1/response_encoder.h"

#include <gtest/gtest.h>

#include "proxy/http/http1/codec_factory.h"
#include "tests/proxy/http/http1/test_fakes.h"

namespace ferry::http::http1 {
namespace {

// Drives the response encoder the way the connection manager does: through a server codec
// that decoded `request`.
class ResponseEncoderTest : public testing::Test {
 protected:
  ResponseEncoder& encoderFor(std::string_view request) {
    callbacks_.requests.clear();
    codec_ = createServerCodec(output_, callbacks_, CodecSettings{});
    Buffer input = bufferOf(request);
    EXPECT_TRUE(codec_->dispatch(input));
    EXPECT_EQ(callbacks_.requests.size(), 1u);
    return *callbacks_.requests.at(0)->encoder;
  }
  static ResponseHeaders response(int status, std::vector<HeaderField> fields = {}) {
    ResponseHeaders h;
    h.status = status;
    for (auto& f : fields) h.headers.add(f.name, f.value);
    return h;
  }
  void data(ResponseEncoder& encoder, std::string_view bytes, bool end_stream) {
    Buffer b = bufferOf(bytes);
    encoder.encodeData(b, end_stream);
    EXPECT_TRUE(b.empty());  // always drained
  }

  static constexpr std::string_view kGet = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
  Buffer output_;
  FakeServerCallbacks callbacks_;
  std::unique_ptr<ServerCodec> codec_;
};

TEST_F(ResponseEncoderTest, ContentLengthFraming) {
  ResponseEncoder& e = encoderFor(kGet);
  e.encodeHeaders(response(200, {{"Content-Length", "5"}, {"Content-Type", "text/plain"}}), false);
  data(e, "hel", false);
  data(e, "lo", true);
  EXPECT_EQ(output_.toString(),
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello");
  EXPECT_FALSE(codec_->wantsClose());
}

TEST_F(ResponseEncoderTest, ChunkedWritesEachPieceImmediately) {
  ResponseEncoder& e = encoderFor(kGet);
  e.encodeHeaders(response(200), false);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
  output_.clear();
  data(e, "hello world, this is seventeen+", false);
  EXPECT_EQ(output_.toString(), "1f\r\nhello world, this is seventeen+\r\n");
  output_.clear();
  data(e, "", false);  // an empty piece must not read as the last chunk
  EXPECT_EQ(output_.toString(), "");
  data(e, "x", true);
  EXPECT_EQ(output_.toString(), "1\r\nx\r\n0\r\n\r\n");
  EXPECT_FALSE(streamActive(*codec_));
}

TEST_F(ResponseEncoderTest, ChunkedEndWithEmptyData) {
  ResponseEncoder& e = encoderFor(kGet);
  e.encodeHeaders(response(200), false);
  output_.clear();
  data(e, "", true);
  EXPECT_EQ(output_.toString(), "0\r\n\r\n");
}

TEST_F(ResponseEncoderTest, EndStreamWithoutBodyAddsContentLengthZero) {
  ResponseEncoder& e = encoderFor(kGet);
  e.encodeHeaders(response(404), true);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
  EXPECT_FALSE(streamActive(*codec_));
}

TEST_F(ResponseEncoderTest, CustomAndMissingReason) {
  ResponseEncoder& e = encoderFor(kGet);
  ResponseHeaders h = response(299);
  e.encodeHeaders(h, true);
  EXPECT_EQ(output_.toString().substr(0, 15), "HTTP/1.1 299 \r\n");
  ResponseEncoder& e2 = encoderFor(kGet);
  output_.clear();
  h = response(200);
  h.reason = "Fine";
  e2.encodeHeaders(h, true);
  EXPECT_EQ(output_.toString().substr(0, 19), "HTTP/1.1 200 Fine\r\n");
}

TEST_F(ResponseEncoderTest, HeadResponseKeepsContentLengthAndDropsBody) {
  ResponseEncoder& e = encoderFor("HEAD / HTTP/1.1\r\nHost: h\r\n\r\n");
  e.encodeHeaders(response(200, {{"Content-Length", "5"}}), false);
  data(e, "hello", true);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
  EXPECT_FALSE(codec_->wantsClose());
}

TEST_F(ResponseEncoderTest, HeadResponseWithoutLengthIsNotChunked) {
  ResponseEncoder& e = encoderFor("HEAD / HTTP/1.1\r\nHost: h\r\n\r\n");
  e.encodeHeaders(response(200), false);
  data(e, "ignored", true);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 200 OK\r\n\r\n");
  EXPECT_FALSE(codec_->wantsClose());
}

TEST_F(ResponseEncoderTest, HeadResponseEndStreamHasNoContentLengthZero) {
  ResponseEncoder& e = encoderFor("HEAD / HTTP/1.1\r\nHost: h\r\n\r\n");
  e.encodeHeaders(response(200), true);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 200 OK\r\n\r\n");
}

TEST_F(ResponseEncoderTest, NoContentNeverHasLengthOrBody) {
  ResponseEncoder& e = encoderFor(kGet);
  e.encodeHeaders(response(204, {{"Content-Length", "3"}}), false);
  data(e, "abc", true);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 204 No Content\r\n\r\n");
  EXPECT_FALSE(streamActive(*codec_));

  ResponseEncoder& e2 = encoderFor(kGet);
  output_.clear();
  e2.encodeHeaders(response(204), true);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 204 No Content\r\n\r\n");
}

TEST_F(ResponseEncoderTest, NotModifiedKeepsLengthDropsBody) {
  ResponseEncoder& e = encoderFor(kGet);
  e.encodeHeaders(response(304, {{"ETag", "\"x\""}, {"Content-Length", "10"}}), false);
  data(e, "0123456789", true);
  EXPECT_EQ(output_.toString(),
            "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 10\r\n\r\n");

  ResponseEncoder& e2 = encoderFor(kGet);
  output_.clear();
  e2.encodeHeaders(response(304), true);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 304 Not Modified\r\n\r\n");
}

TEST_F(ResponseEncoderTest, Http10BodyIsCloseDelimited) {
  ResponseEncoder& e = encoderFor("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_FALSE(codec_->wantsClose());
  e.encodeHeaders(response(200), false);
  data(e, "raw body", true);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nraw body");
  EXPECT_TRUE(codec_->wantsClose());
}

TEST_F(ResponseEncoderTest, Http10KeepAliveWithLengthSaysKeepAlive) {
  ResponseEncoder& e = encoderFor("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  e.encodeHeaders(response(200, {{"Content-Length", "2"}}), false);
  data(e, "hi", true);
  EXPECT_EQ(output_.toString(),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nconnection: keep-alive\r\n\r\nhi");
  EXPECT_FALSE(codec_->wantsClose());
}

TEST_F(ResponseEncoderTest, ConnectionCloseRequestGetsConnectionClose) {
  ResponseEncoder& e = encoderFor("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  e.encodeHeaders(response(200), true);
  EXPECT_EQ(output_.toString(),
            "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
}

TEST_F(ResponseEncoderTest, HopByHopAndUnsafeFieldsSkipped) {
  ResponseEncoder& e = encoderFor(kGet);
  e.encodeHeaders(response(200, {{"Connection", "X-Private"},
                                 {"X-Private", "secret"},
                                 {"Keep-Alive", "timeout=5"},
                                 {"Transfer-Encoding", "gzip"},
                                 {"Upgrade", "h2c"},
                                 {"X-Injected", "a\r\nSet-Cookie: evil"},
                                 {"Bad Name", "v"},
                                 {"X-Ok", "yes"}}),
                  true);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 200 OK\r\nX-Ok: yes\r\ncontent-length: 0\r\n\r\n");
}

// A map a codec parsed (marked wireSafe()) is written without the per-field checks, but still
// without the fields the encoder frames itself.
TEST_F(ResponseEncoderTest, WireSafeFieldsWrittenAsTheyAre) {
  ResponseEncoder& e = encoderFor(kGet);
  ResponseHeaders h = response(204, {{"X-A", "1"}, {"Content-Length", "0"}, {"x-b", "2"}});
  h.headers.markWireSafe();
  e.encodeHeaders(h, true);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 204 No Content\r\nX-A: 1\r\nx-b: 2\r\n\r\n");
}

// A filter's edit clears the mark: what it added is checked again.
TEST_F(ResponseEncoderTest, FieldsAddedAfterParsingAreCheckedAgain) {
  ResponseEncoder& e = encoderFor(kGet);
  ResponseHeaders h = response(200, {{"X-Ok", "yes"}});
  h.headers.markWireSafe();
  h.headers.set("X-Injected", "a\r\nSet-Cookie: evil");
  h.headers.add("Connection", "close");
  EXPECT_FALSE(h.headers.wireSafe());
  e.encodeHeaders(h, true);
  EXPECT_EQ(output_.toString(), "HTTP/1.1 200 OK\r\nX-Ok: yes\r\ncontent-length: 0\r\n\r\n");
}

TEST_F(ResponseEncoderTest, InformationalBeforeFinal) {
  ResponseEncoder& e =
      encoderFor("PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n");
  e.encodeInformational(response(100));
  EXPECT_EQ(output_.toString(), "HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_TRUE(streamActive(*codec_));
}

TEST_F(ResponseEncoderTest, NoInformationalToHttp10Client) {
  ResponseEncoder& e = encoderFor("GET / HTTP/1.0\r\n\r\n");
  e.encodeInformational(response(100));
  EXPECT_EQ(output_.toString(), "");
}

TEST_F(ResponseEncoderTest, NothingAfterComplete) {
  ResponseEncoder& e = encoderFor(kGet);
  e.encodeHeaders(response(200, {{"Content-Length", "1"}}), false);
  data(e, "a", true);
  std::string before = output_.toString();
  data(e, "more", true);
  e.encodeHeaders(response(500), true);
  EXPECT_EQ(output_.toString(), before);
}

}  // namespace
}  // namespace ferry::http::http1
