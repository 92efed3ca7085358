#pragma once
// The two halves of a NO_COPY DATA frame (RFC 9113 §6.1), shared by both streams: the end of
// their nghttp2 read callbacks (Stream::readResponse on the server side,
// ClientStream::readRequest on the client side) offers bytes, and their writeDataFrame (called
// from the codecs' send_data callback right after, within the same write) copies them out.

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "proxy/buffer/buffer.h"

namespace ferry::http::http2 {

// Offers up to `max_length` of the `pending` body bytes without copying them (NO_COPY: the
// codec's send_data callback writes them from the stream's buffer), with END_STREAM once the
// body has `ended` and these are its last bytes. With nothing pending and the body not ended,
// defers the stream and notes it in `deferred` so that the stream resumes it when bytes come.
inline ssize_t offerPendingData(size_t max_length, size_t pending, bool ended, bool& deferred,
                                uint32_t* data_flags) {
  const size_t length = std::min(max_length, pending);
  if (length == 0 && !ended) {
    deferred = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (ended && length == pending) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(length);
}

// Writes one DATA frame whose `length` payload bytes nghttp2 took from `pending` (offered by
// offerPendingData in the same write, so they are still there): the 9-byte `frame_header`,
// the Pad Length octet and padding if nghttp2 chose to pad (ferry never asks it to, but the
// layout is nghttp2's to decide), and the bytes, moved from `pending` to `output`.
inline void writeDataFrame(Buffer& output, Buffer& pending, const nghttp2_frame& frame,
                           const uint8_t* frame_header, size_t length) {
  output.add(frame_header, 9);
  const size_t padlen = frame.data.padlen;
  if (padlen > 0) {
    const uint8_t pad_length = static_cast<uint8_t>(padlen - 1);
    output.add(&pad_length, 1);
  }
  output.move(pending, length);
  if (padlen > 1) output.add(std::string(padlen - 1, '\0'));
}

}  // namespace ferry::http::http2
