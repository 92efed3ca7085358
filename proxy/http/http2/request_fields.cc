#include "proxy/http/http2/request_fields.h"

namespace ferry::http::http2 {

namespace {

nghttp2_nv makeNv(std::string_view name, std::string_view value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// True when `name` is one of the options of the Connection fields (RFC 9110 §7.6.1).
bool namedByConnection(std::string_view name, const HeaderMap& headers) {
  for (const auto& field : headers.fields()) {
    if (!equalsIgnoreCase(field.name, "connection")) continue;
    std::string_view rest = field.value;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      if (equalsIgnoreCase(trim(rest.substr(0, comma)), name)) return true;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return false;
}

// A field nghttp2 would refuse to send (or the owner would take as malformed, §8.2.1) is left
// out rather than costing the whole request.
bool writable(const HeaderField& field) {
  if (field.name.empty() || field.name.front() == ':') return false;
  for (char c : field.value) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

}  // namespace

RequestFieldList::RequestFieldList(const RequestHeaders& headers, std::string_view scheme)
    : scheme_(scheme) {
  const auto& fields = headers.headers.fields();
  const bool has_connection = headers.headers.has("connection");
  std::string_view authority = headers.authority;
  if (const auto host = headers.headers.get("host"); host && !host->empty()) authority = *host;
  nv_.reserve(fields.size() + 4);
  nv_.push_back(makeNv(":method", headers.method));
  nv_.push_back(makeNv(":scheme", scheme_));
  nv_.push_back(makeNv(":authority", authority));
  nv_.push_back(makeNv(":path", headers.path));
  for (const auto& field : fields) {
    if (equalsIgnoreCase(field.name, "host")) continue;
    // §8.2.2: TE is allowed with the value "trailers" only.
    if (equalsIgnoreCase(field.name, "te")) {
      if (equalsIgnoreCase(trim(field.value), "trailers")) nv_.push_back(makeNv("te", "trailers"));
      continue;
    }
    if (isHopByHopHeader(field.name)) continue;
    if (has_connection && namedByConnection(field.name, headers.headers)) continue;
    if (!writable(field)) continue;
    nv_.push_back(makeNv(field.name, field.value));
  }
}

}  // namespace ferry::http::http2
