#include "proxy/http/http2/session_callbacks.h"

#include <string_view>

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

ServerCodecImpl& codecOf(void* user_data) { return *static_cast<ServerCodecImpl*>(user_data); }

std::string_view view(const uint8_t* data, size_t length) {
  return {reinterpret_cast<const char*>(data), length};
}

ssize_t sendCallback(nghttp2_session*, const uint8_t* data, size_t length, int, void* user) {
  return codecOf(user).onSend(data, length);
}

int sendDataCallback(nghttp2_session*, nghttp2_frame* frame, const uint8_t* framehd, size_t length,
                     nghttp2_data_source* source, void* user) {
  return codecOf(user).onSendData(*frame, framehd, length, *static_cast<Stream*>(source->ptr));
}

int beginHeadersCallback(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  return codecOf(user).onBeginHeaders(*frame);
}

int headerCallback(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                   size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  return codecOf(user).onHeader(*frame, view(name, namelen), view(value, valuelen));
}

int invalidHeaderCallback(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                          size_t namelen, const uint8_t*, size_t, uint8_t, void* user) {
  return codecOf(user).onInvalidHeader(*frame, view(name, namelen));
}

int invalidFrameCallback(nghttp2_session*, const nghttp2_frame* frame, int lib_error, void* user) {
  return codecOf(user).onInvalidFrame(*frame, lib_error);
}

int frameRecvCallback(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  return codecOf(user).onFrameRecv(*frame);
}

int dataChunkCallback(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data,
                      size_t length, void* user) {
  return codecOf(user).onDataChunk(stream_id, data, length);
}

int streamCloseCallback(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user) {
  return codecOf(user).onStreamClose(stream_id, error_code);
}

int frameSendCallback(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  return codecOf(user).onFrameSend(*frame);
}

int frameNotSendCallback(nghttp2_session*, const nghttp2_frame* frame, int lib_error, void* user) {
  return codecOf(user).onFrameNotSend(*frame, lib_error);
}

ssize_t readResponseCallback(nghttp2_session*, int32_t, uint8_t*, size_t length,
                             uint32_t* data_flags, nghttp2_data_source* source, void*) {
  return static_cast<Stream*>(source->ptr)->readResponse(length, data_flags);
}

}  // namespace

nghttp2_session* newServerSession(ServerCodecImpl& codec) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return nullptr;
  nghttp2_session_callbacks_set_send_callback(callbacks, sendCallback);
  nghttp2_session_callbacks_set_send_data_callback(callbacks, sendDataCallback);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, beginHeadersCallback);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, headerCallback);
  nghttp2_session_callbacks_set_on_invalid_header_callback(callbacks, invalidHeaderCallback);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks, invalidFrameCallback);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, frameRecvCallback);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, dataChunkCallback);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, streamCloseCallback);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, frameSendCallback);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, frameNotSendCallback);

  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) != 0) {
    nghttp2_session_callbacks_del(callbacks);
    return nullptr;
  }
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

  nghttp2_session* session = nullptr;
  int rv = nghttp2_session_server_new2(&session, callbacks, &codec, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  return rv == 0 ? session : nullptr;
}

nghttp2_data_provider responseBodyProvider(Stream& stream) {
  nghttp2_data_provider provider;
  provider.source.ptr = &stream;
  provider.read_callback = readResponseCallback;
  return provider;
}

}  // namespace ferry::http::http2
