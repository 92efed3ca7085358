#include "proxy/http/codec_selection.h"

#include <event2/buffer.h>

#include <algorithm>

namespace ferry::http {

namespace {
// RFC 9113 §3.4: what a client sends first on an HTTP/2 connection. "PRI" is no method a
// Streams client uses, and an HTTP/1.1 parser refuses "HTTP/2.0" anyway.
constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
}  // namespace

CodecChoice chooseCodec(bool http2_enabled, bool tls, std::string_view alpn, const Buffer& input) {
  if (!http2_enabled) return CodecChoice::Http1;
  if (tls) return alpn == "h2" ? CodecChoice::Http2 : CodecChoice::Http1;
  const size_t length = std::min(input.length(), kPreface.size());
  char head[kPreface.size()];
  if (length > 0) evbuffer_copyout(input.raw(), head, length);
  if (std::string_view(head, length) != kPreface.substr(0, length)) return CodecChoice::Http1;
  return length == kPreface.size() ? CodecChoice::Http2 : CodecChoice::NeedMoreBytes;
}

}  // namespace ferry::http
