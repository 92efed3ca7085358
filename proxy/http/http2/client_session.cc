#include "proxy/http/http2/client_session.h"

#include <string_view>

#include "proxy/http/http2/client_codec.h"
#include "proxy/http/http2/client_stream.h"

namespace ferry::http::http2 {

namespace {

// Before the owner's SETTINGS arrive, streams are capped at this (RFC 9113 §6.5.2 leaves the
// initial limit open and recommends at least 100): the pool assumes it and learns the owner's.
constexpr uint32_t kAssumedMaxConcurrentStreams = 100;

ClientCodec& codecOf(void* user_data) { return *static_cast<ClientCodec*>(user_data); }

std::string_view view(const uint8_t* data, size_t length) {
  return {reinterpret_cast<const char*>(data), length};
}

ssize_t sendCallback(nghttp2_session*, const uint8_t* data, size_t length, int, void* user) {
  return codecOf(user).onSend(data, length);
}

int sendDataCallback(nghttp2_session*, nghttp2_frame* frame, const uint8_t* framehd, size_t length,
                     nghttp2_data_source* source, void* user) {
  return codecOf(user).onSendData(*frame, framehd, length,
                                  *static_cast<ClientStream*>(source->ptr));
}

int beginHeadersCallback(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  return codecOf(user).onBeginHeaders(*frame);
}

int headerCallback(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                   size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  return codecOf(user).onHeader(*frame, view(name, namelen), view(value, valuelen));
}

int invalidHeaderCallback(nghttp2_session*, const nghttp2_frame* frame, const uint8_t*, size_t,
                          const uint8_t*, size_t, uint8_t, void* user) {
  return codecOf(user).onInvalidHeader(*frame);
}

int invalidFrameCallback(nghttp2_session*, const nghttp2_frame* frame, int, void* user) {
  // A malformed response HEADERS (RFC 9113 §8.1.1): nghttp2 resets the stream itself (a
  // nonzero return here would be fatal for the session).
  codecOf(user).onInvalidFrame(*frame);
  return 0;
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

ssize_t readRequestCallback(nghttp2_session*, int32_t, uint8_t*, size_t length,
                            uint32_t* data_flags, nghttp2_data_source* source, void*) {
  return static_cast<ClientStream*>(source->ptr)->readRequest(length, data_flags);
}

}  // namespace

nghttp2_session* newClientSession(ClientCodec& codec) {
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
  // Stream credit is ferry's to return (ClientStream::returnCredit): a stream whose client
  // reads slowly stops getting response bytes while the others go on (RFC 9113 §5.2).
  nghttp2_option_set_no_auto_window_update(option, 1);
  nghttp2_option_set_peer_max_concurrent_streams(option, kAssumedMaxConcurrentStreams);
  nghttp2_option_set_no_closed_streams(option, 1);
  // nghttp2's HTTP messaging checks stay on: a response without :status, with a bad
  // content-length, connection-specific fields, ... resets its stream (PROTOCOL_ERROR).

  nghttp2_session* session = nullptr;
  const int rv = nghttp2_session_client_new2(&session, callbacks, &codec, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  return rv == 0 ? session : nullptr;
}

nghttp2_data_provider requestBodyProvider(ClientStream& stream) {
  nghttp2_data_provider provider;
  provider.source.ptr = &stream;
  provider.read_callback = readRequestCallback;
  return provider;
}

}  // namespace ferry::http::http2
