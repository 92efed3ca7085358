#include "proxy/http/http1/body_writer.h"

#include <cstdio>
#include <string>

#include "proxy/http/http1/field_syntax.h"

namespace ferry::http::http1 {

namespace {
constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";  // last-chunk, no trailers (RFC 9112 §7.1)
}  // namespace

uint64_t BodyWriter::write(Buffer& output, Buffer& data, bool end_stream) {
  uint64_t written = 0;
  const size_t size = data.length();
  if (done_) {
    // The message already ended; more bytes would corrupt the next message on the connection.
    data.clear();
    return 0;
  }
  switch (framing_) {
    case BodyFraming::None:
      data.clear();
      break;
    case BodyFraming::ContentLength:
    case BodyFraming::CloseDelimited:
      output.move(data);
      written += size;
      break;
    case BodyFraming::Chunked:
      // A zero-size chunk would read as the last chunk, so empty pieces write nothing.
      if (size > 0) {
        char header[32];
        int n = std::snprintf(header, sizeof(header), "%zx\r\n", size);
        output.add(header, static_cast<size_t>(n));
        output.move(data);
        output.add(kCrlf);
        written += static_cast<uint64_t>(n) + size + kCrlf.size();
      }
      if (end_stream) {
        output.add(kLastChunk);
        written += kLastChunk.size();
      }
      break;
  }
  if (end_stream) done_ = true;
  return written;
}

uint64_t BodyWriter::writeTrailers(Buffer& output, const HeaderMap& trailers) {
  if (framing_ != BodyFraming::Chunked || done_) {
    Buffer none;
    return write(output, none, true);
  }
  done_ = true;
  std::string section = "0\r\n";
  for (const auto& field : trailers.fields()) {
    if (isForbiddenTrailer(field.name) || !isToken(field.name) || !isSafeFieldValue(field.value)) {
      continue;
    }
    section.append(field.name).append(": ").append(field.value).append(kCrlf);
  }
  section.append(kCrlf);
  output.add(section);
  return section.size();
}

}  // namespace ferry::http::http1
