#include "proxy/http/http2/session_callbacks.h"

#include "proxy/http/http2/codec_callbacks.h"
#include "proxy/http/http2/server_codec.h"
#include "proxy/http/http2/stream.h"

namespace ferry::http::http2 {

namespace {

// Outgoing SETTINGS ACKs and PING ACKs nghttp2 may hold before it calls the client a flood
// (NGHTTP2_ERR_FLOODED): a client that sends PING or SETTINGS faster than it reads the ACKs
// (or while the output is paused) is cut off with bounded memory. nghttp2's default.
constexpr size_t kMaxOutboundAck = 1000;
// CONTINUATION frames after one HEADERS (nghttp2's default, set here so the bound is
// visible): with the header list limit it caps the work one header block can cause.
constexpr size_t kMaxContinuations = 8;

void setServerOptions(nghttp2_option* option) {
  // Flow-control credit is ferry's to return (nghttp2_session_consume_*), so a stream whose
  // upstream is slow stops getting request bytes while the others go on (RFC 9113 §5.2).
  nghttp2_option_set_no_auto_window_update(option, 1);
  nghttp2_option_set_max_outbound_ack(option, kMaxOutboundAck);
  nghttp2_option_set_max_continuations(option, kMaxContinuations);
  // No RFC 7540 priority tree kept for closed streams: PRIORITY frames cost nothing to keep.
  nghttp2_option_set_no_closed_streams(option, 1);
  // nghttp2's defaults kept on purpose: HTTP messaging checks (RFC 9113 §8, see
  // request_conversion.h), at most 32 entries per SETTINGS frame, and its RST_STREAM token
  // bucket (1000 burst, 33/s) behind ferry's own rapid-reset rule (flood_guard.h).
}

ssize_t readResponseCallback(nghttp2_session*, int32_t, uint8_t*, size_t length,
                             uint32_t* data_flags, nghttp2_data_source* source, void*) {
  return static_cast<Stream*>(source->ptr)->readResponse(length, data_flags);
}

}  // namespace

nghttp2_session* newServerSession(Http2ServerCodec& codec) {
  // The callback trampolines are shared with the client codec (codec_callbacks.h).
  return newCodecSession<Http2ServerCodec, Stream>(codec, SessionRole::kServer, setServerOptions);
}

nghttp2_data_provider responseBodyProvider(Stream& stream) {
  nghttp2_data_provider provider;
  provider.source.ptr = &stream;
  provider.read_callback = readResponseCallback;
  return provider;
}

}  // namespace ferry::http::http2
