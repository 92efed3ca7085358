#pragma once
// The glue between nghttp2's C callbacks and the server codec: trampolines that recover the
// codec (the session's user_data) or the stream (a data source's pointer) and forward. Also
// the session's options, which carry most of the flood protection (see the .cc).

#include <nghttp2/nghttp2.h>

namespace ferry::http::http2 {

class ServerCodecImpl;
class Stream;

// A server session whose callbacks go to `codec`; nullptr when nghttp2 is out of memory.
nghttp2_session* newServerSession(ServerCodecImpl& codec);

// Pulls `stream`'s pending response bytes as DATA frames (nghttp2_submit_response's provider).
nghttp2_data_provider responseBodyProvider(Stream& stream);

}  // namespace ferry::http::http2
