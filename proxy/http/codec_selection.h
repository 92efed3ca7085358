#pragma once
// Which codec a new downstream connection gets: HTTP/2 when TLS chose "h2" by ALPN (RFC 9113
// §3.2) or, on a cleartext connection, when the client opens with the HTTP/2 connection
// preface (prior knowledge, RFC 9113 §3.3); HTTP/1.1 otherwise. No h2c Upgrade (RFC 9113
// deprecates it). Called by the connection manager on the connection's first bytes.

#include <string_view>

#include "proxy/buffer/buffer.h"

namespace ferry::http {

enum class CodecChoice {
  Http1,
  Http2,
  NeedMoreBytes,  // the bytes so far are a prefix of the preface: wait for more
};

// `alpn`: the protocol TLS negotiated (empty on cleartext or without ALPN); `input`: the bytes
// read so far (not consumed).
CodecChoice chooseCodec(bool http2_enabled, bool tls, std::string_view alpn, const Buffer& input);

}  // namespace ferry::http
