#pragma once
// The server codec's nghttp2 session: its options, which carry most of the flood protection
// (see the .cc), and the DATA provider for responses. The callback trampolines themselves are
// shared with the client codec (codec_callbacks.h).

#include <nghttp2/nghttp2.h>

namespace ferry::http::http2 {

class Http2ServerCodec;
class Stream;

// A server session whose callbacks go to `codec`; nullptr when nghttp2 is out of memory.
nghttp2_session* newServerSession(Http2ServerCodec& codec);

// Pulls `stream`'s pending response bytes as DATA frames (nghttp2_submit_response's provider).
nghttp2_data_provider responseBodyProvider(Stream& stream);

}  // namespace ferry::http::http2
