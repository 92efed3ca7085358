#include "proxy/http/http2/response_conversion.h"

#include <gtest/gtest.h>

namespace ferry::http::http2 {
namespace {

std::string describe(const ResponseFieldList& list) {
  std::string out;
  for (size_t i = 0; i < list.size(); ++i) {
    const nghttp2_nv& nv = list.data()[i];
    out += std::string(reinterpret_cast<const char*>(nv.name), nv.namelen) + ": " +
           std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen) + "\n";
  }
  return out;
}

TEST(ResponseFieldList, StatusFirstConnectionFieldsDropped) {
  ResponseHeaders h;
  h.status = 200;
  h.headers.add("Content-Type", "text/plain");
  h.headers.add("Connection", "close, X-Private");
  h.headers.add("x-private", "1");
  h.headers.add("Keep-Alive", "timeout=5");
  h.headers.add("Proxy-Connection", "keep-alive");
  h.headers.add("Transfer-Encoding", "chunked");
  h.headers.add("Upgrade", "h2c");
  h.headers.add("Content-Length", "3");
  EXPECT_EQ(describe(ResponseFieldList(h)),
            ":status: 200\nContent-Type: text/plain\nContent-Length: 3\n");
}

TEST(ResponseFieldList, NoContentLengthOn204Or1xx) {
  ResponseHeaders h;
  h.status = 204;
  h.headers.add("content-length", "0");
  EXPECT_EQ(describe(ResponseFieldList(h)), ":status: 204\n");
  h.status = 103;
  EXPECT_EQ(describe(ResponseFieldList(h)), ":status: 103\n");
  h.status = 304;
  EXPECT_EQ(describe(ResponseFieldList(h)), ":status: 304\ncontent-length: 0\n");
}

TEST(ResponseFieldList, UnwritableFieldsSkipped) {
  ResponseHeaders h;
  h.status = 200;
  h.headers.add("x-split", "a\r\nb");
  h.headers.add(":status", "999");
  h.headers.add("x-ok", "fine");
  EXPECT_EQ(describe(ResponseFieldList(h)), ":status: 200\nx-ok: fine\n");
}

// A map an HTTP/1 codec parsed (marked wire-safe: it checked names and values and removed the
// hop-by-hop fields) skips the per-field checks, but not the rules that depend on the status.
TEST(ResponseFieldList, ParsedMapSkipsFieldChecksNotStatusRules) {
  ResponseHeaders h;
  h.status = 204;
  h.headers.add("Server", "origin");
  h.headers.add("content-length", "0");
  h.headers.markWireSafe();
  EXPECT_EQ(describe(ResponseFieldList(h)), ":status: 204\nServer: origin\n");
  h.status = 200;
  EXPECT_EQ(describe(ResponseFieldList(h)), ":status: 200\nServer: origin\ncontent-length: 0\n");
}

}  // namespace
}  // namespace ferry::http::http2
