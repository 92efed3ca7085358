#include "proxy/http/http2/client_session.h"

#include "proxy/http/http2/client_codec.h"
#include "proxy/http/http2/client_stream.h"
#include "proxy/http/http2/codec_callbacks.h"

namespace ferry::http::http2 {

namespace {

// Before the owner's SETTINGS arrive, streams are capped at this (RFC 9113 §6.5.2 leaves the
// initial limit open and recommends at least 100): the pool assumes it and learns the owner's.
constexpr uint32_t kAssumedMaxConcurrentStreams = 100;

void setClientOptions(nghttp2_option* option) {
  // Stream credit is ferry's to return (ClientStream::returnCredit): a stream whose client
  // reads slowly stops getting response bytes while the others go on (RFC 9113 §5.2).
  nghttp2_option_set_no_auto_window_update(option, 1);
  nghttp2_option_set_peer_max_concurrent_streams(option, kAssumedMaxConcurrentStreams);
  nghttp2_option_set_no_closed_streams(option, 1);
  // nghttp2's HTTP messaging checks stay on: a response without :status, with a bad
  // content-length, connection-specific fields, ... resets its stream (PROTOCOL_ERROR).
}

ssize_t readRequestCallback(nghttp2_session*, int32_t, uint8_t*, size_t length,
                            uint32_t* data_flags, nghttp2_data_source* source, void*) {
  return static_cast<ClientStream*>(source->ptr)->readRequest(length, data_flags);
}

}  // namespace

nghttp2_session* newClientSession(Http2ClientCodec& codec) {
  // The callback trampolines are shared with the server codec (codec_callbacks.h).
  return newCodecSession<Http2ClientCodec, ClientStream>(codec, SessionRole::kClient,
                                                         setClientOptions);
}

nghttp2_data_provider requestBodyProvider(ClientStream& stream) {
  nghttp2_data_provider provider;
  provider.source.ptr = &stream;
  provider.read_callback = readRequestCallback;
  return provider;
}

}  // namespace ferry::http::http2
