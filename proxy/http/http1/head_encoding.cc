#include "proxy/http/http1/head_encoding.h"

#include <algorithm>
#include <charconv>

#include "proxy/http/copy_bytes.h"
#include "proxy/http/http1/field_syntax.h"
#include "proxy/http/http1/hop_by_hop.h"

namespace ferry::http::http1 {

size_t headSizeHint(const HeaderMap& headers) {
  // Start line, Host, Content-Length or Transfer-Encoding, Connection, the final CRLF.
  constexpr size_t kEncoderAdditions = 160;
  size_t size = kEncoderAdditions;
  for (const auto& field : headers.fields()) size += field.name.size() + field.value.size() + 4;
  return size;
}

void flushHead(std::string& head, Buffer& output) {
  constexpr size_t kKeptCapacity = 4096;
  output.add(head);
  if (head.capacity() > kKeptCapacity) {
    head = std::string();
  } else {
    head.clear();
  }
}

void appendField(std::string& head, std::string_view name, std::string_view value) {
  head.append(name);
  head.append(": ");
  head.append(value);
  head.append("\r\n");
}

namespace {

bool skipped(std::string_view name, std::initializer_list<std::string_view> skip) {
  for (std::string_view s : skip) {
    if (equalsIgnoreCase(name, s)) return true;
  }
  return false;
}

}  // namespace

namespace {

// Writes fields through a pointer into room made once for all of a map's fields (the unused
// tail is cut when done) instead of four std::string appends per field.
class FieldWriter {
 public:
  FieldWriter(std::string& head, const HeaderMap& headers) : head_(head) {
    size_t room = 0;
    for (const auto& field : headers.fields()) room += field.name.size() + field.value.size() + 4;
    const size_t start = head.size();
    head.resize(start + room);
    out_ = head.data() + start;
  }
  ~FieldWriter() { head_.resize(static_cast<size_t>(out_ - head_.data())); }
  FieldWriter(const FieldWriter&) = delete;
  FieldWriter& operator=(const FieldWriter&) = delete;

  void write(std::string_view name, std::string_view value) {
    copyBytes(out_, name.data(), name.size());
    out_ += name.size();
    *out_++ = ':';
    *out_++ = ' ';
    copyBytes(out_, value.data(), value.size());
    out_ += value.size();
    *out_++ = '\r';
    *out_++ = '\n';
  }

 private:
  std::string& head_;
  char* out_;
};

}  // namespace

void appendEndToEndFields(std::string& head, const HeaderMap& headers,
                          std::initializer_list<std::string_view> skip) {
  if (headers.wireSafe()) {
    // Parsed by an HTTP/1 codec and untouched by filters since: the checks below would all
    // pass (see HeaderMap::wireSafe()).
    FieldWriter writer(head, headers);
    for (const auto& field : headers.fields()) {
      if (!skipped(field.name, skip)) writer.write(field.name, field.value);
    }
    return;
  }
  const std::string connection_options = connectionOptions(headers);
  FieldWriter writer(head, headers);
  for (const auto& field : headers.fields()) {
    if (isHopByHop(field.name, connection_options)) continue;
    if (skipped(field.name, skip)) continue;
    if (!isToken(field.name) || !isSafeFieldValue(field.value)) continue;
    writer.write(field.name, field.value);
  }
}

std::optional<uint64_t> contentLength(const HeaderMap& headers) {
  auto value = headers.get("content-length");
  if (!value) return std::nullopt;
  std::string_view digits = trimOws(*value);
  uint64_t length = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), length);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    return std::nullopt;
  }
  return length;
}

}  // namespace ferry::http::http1
