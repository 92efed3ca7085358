#pragma once
// The upstream (client) codec's nghttp2 session: its options and the DATA provider for
// request bodies. The callback trampolines themselves are shared with the server codec
// (codec_callbacks.h).

#include <nghttp2/nghttp2.h>

namespace ferry::http::http2 {

class Http2ClientCodec;
class ClientStream;

// A client session whose callbacks go to `codec`; nullptr when nghttp2 is out of memory.
nghttp2_session* newClientSession(Http2ClientCodec& codec);

// Pulls `stream`'s pending request body as DATA frames (nghttp2_submit_request's provider).
nghttp2_data_provider requestBodyProvider(ClientStream& stream);

}  // namespace ferry::http::http2
