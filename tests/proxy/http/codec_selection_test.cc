// chooseCodec: which codec a new downstream connection gets from its first bytes and ALPN.
#include "proxy/http/codec_selection.h"

#include <gtest/gtest.h>

#include <string>

namespace ferry::http {
namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

CodecChoice choose(std::string_view bytes, bool http2 = true, bool tls = false,
                   std::string_view alpn = "") {
  Buffer input;
  input.add(bytes);
  const CodecChoice choice = chooseCodec(http2, tls, alpn, input);
  EXPECT_EQ(input.length(), bytes.size()) << "the bytes are only looked at, not consumed";
  return choice;
}

TEST(CodecSelectionTest, ThePrefaceOnCleartextIsHttp2) {
  EXPECT_EQ(choose(kPreface), CodecChoice::Http2);
  // With the client's first frames behind it, split anywhere after the preface.
  EXPECT_EQ(choose(std::string(kPreface) + std::string("\0\0\0\4\0\0\0\0\0", 9)),
            CodecChoice::Http2);
}

TEST(CodecSelectionTest, APrefixOfThePrefaceWaitsForMoreBytes) {
  EXPECT_EQ(choose(""), CodecChoice::NeedMoreBytes);
  EXPECT_EQ(choose("P"), CodecChoice::NeedMoreBytes);
  EXPECT_EQ(choose(kPreface.substr(0, kPreface.size() - 1)), CodecChoice::NeedMoreBytes);
}

TEST(CodecSelectionTest, AnythingElseIsHttp11) {
  EXPECT_EQ(choose("GET / HTTP/1.1\r\n"), CodecChoice::Http1);
  EXPECT_EQ(choose("POST"), CodecChoice::Http1);
  // "PRI" as an HTTP/1.1 method is not the preface.
  EXPECT_EQ(choose("PRI / HTTP/1.1\r\n\r\n"), CodecChoice::Http1);
}

TEST(CodecSelectionTest, TlsGoesByAlpnOnly) {
  EXPECT_EQ(choose("", true, true, "h2"), CodecChoice::Http2);
  EXPECT_EQ(choose("", true, true, "http/1.1"), CodecChoice::Http1);
  // No ALPN on TLS: HTTP/1.1, even for a preface (no prior knowledge over TLS).
  EXPECT_EQ(choose(kPreface, true, true, ""), CodecChoice::Http1);
}

TEST(CodecSelectionTest, HttpTwoOffMeansHttp11Always) {
  EXPECT_EQ(choose(kPreface, false), CodecChoice::Http1);
  EXPECT_EQ(choose("", false, true, "h2"), CodecChoice::Http1);
}

}  // namespace
}  // namespace ferry::http
