#pragma once
// Entry point of the downstream HTTP/2 codec (RFC 9113) on nghttp2. The connection creates one
// codec per HTTP/2 connection (ALPN "h2", or the client's preface on the cleartext listener)
// and owns it; `output` is the Buffer that connection flushes to its socket, and the codec only
// appends to it. `output` and `callbacks` must outlive the codec.

#include <cstdint>
#include <memory>

#include "proxy/buffer/buffer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"

namespace ferry::http::http2 {

struct Http2Settings {
  // SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 §6.5.2). Live feeds are long-lived, and a browser
  // or a load balancer puts hundreds of them on one connection.
  uint32_t max_concurrent_streams = 256;
  // SETTINGS_INITIAL_WINDOW_SIZE: request body bytes a client may send on one stream before
  // ferry returns credit. Credit is returned only once the stream's decoder took the bytes and
  // the stream is not read-disabled, so this bounds what one stalled upload makes ferry hold
  // (256 streams x 64 KiB = 16 MiB per connection at worst). 64 KiB is the protocol's default
  // (65,535) rounded up: enough for full speed over a low-latency LB hop.
  uint32_t initial_stream_window = 64 * 1024;
  // The connection's receive window. Connection-level credit is returned as soon as bytes
  // arrive (they are then held per stream, under the stream window), so this only caps bytes in
  // flight; it is large so that one stalled stream never stalls the others (§5.2).
  uint32_t connection_window = 16 * 1024 * 1024;
  // Sum of name and value sizes of a request's decoded header list (pseudo-headers included),
  // as limits.max_request_header_bytes for HTTP/1.1; more is answered with 431. Also advertised
  // as SETTINGS_MAX_HEADER_LIST_SIZE (whose +32 per field makes a client that honours it stay
  // below this limit).
  uint32_t max_request_header_bytes = 60 * 1024;
  // Header fields in a request (regular fields; each cookie crumb counts); more: 431.
  uint32_t max_request_headers = 100;
  // Response bytes one stream may have waiting for flow-control credit or the socket before its
  // StreamCallbacks hear onAboveWriteBufferHighWatermark; onBelowWriteBufferLowWatermark at half.
  uint32_t stream_write_high_watermark = 1024 * 1024;
  // Rapid reset (CVE-2023-44487): once this many streams were opened, a connection where more
  // than half the streams were reset by the client before their response head went out is
  // closed with GOAWAY ENHANCE_YOUR_CALM.
  uint32_t rapid_reset_min_streams = 100;
};

// Downstream: decodes requests into streams, writes responses as frames. Writes the server's
// connection preface (SETTINGS, RFC 9113 §3.4) into `output` right away.
std::unique_ptr<ServerCodec> createServerCodec(Buffer& output, ServerConnectionCallbacks& callbacks,
                                               const Http2Settings& settings,
                                               event::Dispatcher* dispatcher = nullptr);

}  // namespace ferry::http::http2
