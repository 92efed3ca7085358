#pragma once
// The glue between nghttp2's C callbacks and the upstream (client) codec: trampolines that
// recover the codec (the session's user_data) or the stream (a data source's pointer), and the
// client session's options.

#include <nghttp2/nghttp2.h>

namespace ferry::http::http2 {

class ClientCodec;
class ClientStream;

// A client session whose callbacks go to `codec`; nullptr when nghttp2 is out of memory.
nghttp2_session* newClientSession(ClientCodec& codec);

// Pulls `stream`'s pending request body as DATA frames (nghttp2_submit_request's provider).
nghttp2_data_provider requestBodyProvider(ClientStream& stream);

}  // namespace ferry::http::http2
