#pragma once
// The nghttp2 callback table both HTTP/2 codecs share: C trampolines that recover the codec
// (the session's user_data) or the stream (a DATA source's pointer) and forward to a member.
// session_callbacks.cc (server codec, downstream) and client_session.cc (client codec,
// upstream) each call newCodecSession with their codec and stream types and their own
// nghttp2 options; everything else about the session is the same in both directions.
//
// `Codec` (Http2ServerCodec or Http2ClientCodec) provides, with nghttp2's return conventions
// (0, NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE, NGHTTP2_ERR_CALLBACK_FAILURE, ...):
//   ssize_t onSend(const uint8_t* data, size_t length);
//   int onSendData(nghttp2_frame&, const uint8_t* frame_header, size_t length, StreamT&);
//   int onBeginHeaders(const nghttp2_frame&);
//   int onHeader(const nghttp2_frame&, std::string_view name, std::string_view value);
//   int onInvalidHeader(const nghttp2_frame&, std::string_view name);
//   int onInvalidFrame(const nghttp2_frame&, int lib_error);
//   int onFrameRecv(const nghttp2_frame&);
//   int onDataChunk(int32_t stream_id, const uint8_t* data, size_t length);
//   int onStreamClose(int32_t stream_id, uint32_t error_code);
//   int onFrameSend(const nghttp2_frame&);
//   int onFrameNotSend(const nghttp2_frame&, int lib_error);
// A template rather than a virtual interface: the calls stay direct on the hot path.

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ferry::http::http2 {

enum class SessionRole { kServer, kClient };

namespace codec_callbacks_detail {

inline std::string_view view(const uint8_t* data, size_t length) {
  return {reinterpret_cast<const char*>(data), length};
}

template <class Codec, class StreamT>
struct Trampolines {
  static Codec& codecOf(void* user_data) { return *static_cast<Codec*>(user_data); }

  static ssize_t send(nghttp2_session*, const uint8_t* data, size_t length, int, void* user) {
    return codecOf(user).onSend(data, length);
  }
  static int sendData(nghttp2_session*, nghttp2_frame* frame, const uint8_t* framehd, size_t length,
                      nghttp2_data_source* source, void* user) {
    return codecOf(user).onSendData(*frame, framehd, length, *static_cast<StreamT*>(source->ptr));
  }
  static int beginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    return codecOf(user).onBeginHeaders(*frame);
  }
  static int header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                    size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    return codecOf(user).onHeader(*frame, view(name, namelen), view(value, valuelen));
  }
  static int invalidHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                           size_t namelen, const uint8_t*, size_t, uint8_t, void* user) {
    return codecOf(user).onInvalidHeader(*frame, view(name, namelen));
  }
  static int invalidFrame(nghttp2_session*, const nghttp2_frame* frame, int lib_error, void* user) {
    return codecOf(user).onInvalidFrame(*frame, lib_error);
  }
  static int frameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    return codecOf(user).onFrameRecv(*frame);
  }
  static int dataChunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data,
                       size_t length, void* user) {
    return codecOf(user).onDataChunk(stream_id, data, length);
  }
  static int streamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user) {
    return codecOf(user).onStreamClose(stream_id, error_code);
  }
  static int frameSend(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    return codecOf(user).onFrameSend(*frame);
  }
  static int frameNotSend(nghttp2_session*, const nghttp2_frame* frame, int lib_error, void* user) {
    return codecOf(user).onFrameNotSend(*frame, lib_error);
  }

  static void install(nghttp2_session_callbacks* cb) {
    nghttp2_session_callbacks_set_send_callback(cb, send);
    nghttp2_session_callbacks_set_send_data_callback(cb, sendData);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, beginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(cb, header);
    nghttp2_session_callbacks_set_on_invalid_header_callback(cb, invalidHeader);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb, invalidFrame);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, frameRecv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, dataChunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, streamClose);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, frameSend);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(cb, frameNotSend);
  }
};

}  // namespace codec_callbacks_detail

// A session of `role` whose callbacks go to `codec`, with the options `set_options` chose
// (it gets a fresh nghttp2_option); nullptr when nghttp2 is out of memory.
template <class Codec, class StreamT>
nghttp2_session* newCodecSession(Codec& codec, SessionRole role,
                                 void (*set_options)(nghttp2_option*)) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return nullptr;
  codec_callbacks_detail::Trampolines<Codec, StreamT>::install(callbacks);

  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) != 0) {
    nghttp2_session_callbacks_del(callbacks);
    return nullptr;
  }
  set_options(option);

  nghttp2_session* session = nullptr;
  const int rv = role == SessionRole::kServer
                     ? nghttp2_session_server_new2(&session, callbacks, &codec, option)
                     : nghttp2_session_client_new2(&session, callbacks, &codec, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  return rv == 0 ? session : nullptr;
}

}  // namespace ferry::http::http2
