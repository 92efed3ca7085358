#include "proxy/http/http2/response_conversion.h"

#include <string_view>

namespace ferry::http::http2 {

namespace {

nghttp2_nv makeNv(std::string_view name, std::string_view value,
                  uint8_t flags = NGHTTP2_NV_FLAG_NONE) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), flags};
}

// Fields whose value is new on every response (RFC 7541 §7.1.3: "literal never indexed" is
// for values that do not repeat). Indexing x-request-id would fill the client's 4 KiB dynamic
// table with ids used once, evicting the fields that do repeat, and make every lookup walk a
// chain of them: on the bench it was most of the HPACK encoder's cost.
bool neverRepeats(std::string_view name) { return equalsIgnoreCase(name, "x-request-id"); }

// True when `name` is one of the comma-separated options of the Connection fields (RFC 9110
// §7.6.1): those fields are meant for the HTTP/1.1 hop only.
bool namedByConnection(std::string_view name, const HeaderMap& headers) {
  for (const auto& field : headers.fields()) {
    if (!equalsIgnoreCase(field.name, "connection")) continue;
    std::string_view rest = field.value;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view option = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      while (!option.empty() && (option.front() == ' ' || option.front() == '\t')) {
        option.remove_prefix(1);
      }
      while (!option.empty() && (option.back() == ' ' || option.back() == '\t')) {
        option.remove_suffix(1);
      }
      if (equalsIgnoreCase(option, name)) return true;
    }
  }
  return false;
}

// A field an HTTP/2 client would take as malformed (RFC 9113 §8.2.1) is never written: a
// filter's field that slipped through unchecked would otherwise cost the whole response.
bool writable(const HeaderField& field) {
  if (field.name.empty() || field.name.front() == ':') return false;
  for (char c : field.value) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

}  // namespace

ResponseFieldList::ResponseFieldList(const ResponseHeaders& headers)
    : status_(std::to_string(headers.status)) {
  const auto& fields = headers.headers.fields();
  const bool has_connection = headers.headers.has("connection");
  // 1xx and 204 carry no content and no Content-Length (RFC 9110 §8.6).
  const bool drop_content_length = headers.status < 200 || headers.status == 204;
  nv_.reserve(fields.size() + 1);
  nv_.push_back(makeNv(":status", status_));
  for (const auto& field : fields) {
    // RFC 9113 §8.2.2: connection-specific fields are not sent in HTTP/2.
    if (isHopByHopHeader(field.name)) continue;
    if (has_connection && namedByConnection(field.name, headers.headers)) continue;
    if (drop_content_length && equalsIgnoreCase(field.name, "content-length")) continue;
    if (!writable(field)) continue;
    // Names as the core has them: nghttp2 lowercases the copy it makes when the frame is
    // submitted (RFC 9113 §8.2.1 wants lowercase), which saves a copy here.
    nv_.push_back(makeNv(field.name, field.value,
                         neverRepeats(field.name) ? NGHTTP2_NV_FLAG_NO_INDEX
                                                  : NGHTTP2_NV_FLAG_NONE));
  }
}

}  // namespace ferry::http::http2
