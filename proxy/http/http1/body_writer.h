#pragma once
// Writes a message body into the output with the framing the head announced (RFC 9112 §6):
// Content-Length (bytes as they are), chunked (§7.1), close-delimited (bytes as they are; the
// connection's close ends the body) or none (HEAD responses, 204, 304: bytes are dropped).
// Every call appends immediately; nothing is buffered. Owned by an encoder, one per message.

#include <cstdint>

#include "proxy/buffer/buffer.h"
#include "proxy/http/header_map.h"

namespace ferry::http::http1 {

enum class BodyFraming { None, ContentLength, Chunked, CloseDelimited };

class BodyWriter {
 public:
  // Called when the head has been written; resets per-message state.
  void start(BodyFraming framing) {
    framing_ = framing;
    done_ = false;
  }
  // Drains `data` into `output` (framed); at `end_stream` writes the last chunk if chunked.
  // Returns the number of bytes appended to `output`.
  uint64_t write(Buffer& output, Buffer& data, bool end_stream);
  // Ends the body with a trailer section: chunked, the last chunk followed by `trailers`
  // (RFC 9112 §7.1.2; fields that must not be trailers, or that could split the message, are
  // left out); any other framing has no place for them: it just ends. Returns the bytes
  // appended.
  uint64_t writeTrailers(Buffer& output, const HeaderMap& trailers);
  BodyFraming framing() const { return framing_; }
  bool done() const { return done_; }

 private:
  BodyFraming framing_ = BodyFraming::None;
  bool done_ = false;
};

}  // namespace ferry::http::http1
