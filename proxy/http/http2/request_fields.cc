#include "proxy/http/http2/request_fields.h"

#include "proxy/http/http2/field_rules.h"

namespace ferry::http::http2 {

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
      if (equalsIgnoreCase(trimSpaces(field.value), "trailers"))
        nv_.push_back(makeNv("te", "trailers"));
      continue;
    }
    if (isHopByHopHeader(field.name)) continue;
    if (has_connection && namedByConnection(field.name, headers.headers)) continue;
    if (!writable(field)) continue;
    nv_.push_back(makeNv(field.name, field.value));
  }
}

}  // namespace ferry::http::http2
