#pragma once
// Entry points of the HTTP/1.1 codecs. The connection (downstream) or the connection pool
// (upstream) creates one codec per connection and owns it; `output` is the Buffer that
// connection flushes to its socket, and the codec only appends to it. Both must outlive
// the codec.

#include <cstdint>
#include <memory>

#include "proxy/buffer/buffer.h"
#include "proxy/http/codec.h"
#include "proxy/http/http1/client_codec.h"

namespace ferry::http::http1 {

struct CodecSettings {
  // Request line plus header fields, in raw bytes; a bigger head is answered with 431.
  uint32_t max_request_header_bytes = 60 * 1024;
  // Header fields in a request head; more is answered with 431 (limits.max_request_headers).
  uint32_t max_request_headers = 100;
};

// Downstream: parses requests, writes responses. `callbacks` hears of each new request.
std::unique_ptr<ServerCodec> createServerCodec(Buffer& output, ServerConnectionCallbacks& callbacks,
                                               const CodecSettings& settings);

// Upstream: writes requests, parses responses. One request at a time; reusable after a
// complete response when keepAlive().
std::unique_ptr<Http1ClientCodec> createClientCodec(Buffer& output);

}  // namespace ferry::http::http1
