#include "proxy/http/http2/response_conversion.h"

#include <string_view>

#include "proxy/http/http2/field_rules.h"

namespace ferry::http::http2 {

namespace {

// Fields whose value is new on every response (RFC 7541 §7.1.3: "literal never indexed" is
// for values that do not repeat). Indexing x-request-id would fill the client's 4 KiB dynamic
// table with ids used once, evicting the fields that do repeat, and make every lookup walk a
// chain of them: on the bench it was most of the HPACK encoder's cost.
bool neverRepeats(std::string_view name) { return equalsIgnoreCase(name, "x-request-id"); }

}  // namespace

ResponseFieldList::ResponseFieldList(const ResponseHeaders& headers)
    : status_(std::to_string(headers.status)) {
  const auto& fields = headers.headers.fields();
  // A map an HTTP/1 codec parsed and nobody edited since (HeaderMap::wireSafe(): the upstream
  // answer, as it is on the pass-through path) has no hop-by-hop field left, token names and
  // no CR, LF or NUL in a value: the per-field checks below would all pass.
  const bool checked = headers.headers.wireSafe();
  const bool has_connection = !checked && headers.headers.has("connection");
  // 1xx and 204 carry no content and no Content-Length (RFC 9110 §8.6).
  const bool drop_content_length = headers.status < 200 || headers.status == 204;
  nv_.reserve(fields.size() + 1);
  nv_.push_back(makeNv(":status", status_));
  for (const auto& field : fields) {
    // RFC 9113 §8.2.2: connection-specific fields are not sent in HTTP/2.
    if (!checked) {
      if (isHopByHopHeader(field.name)) continue;
      if (has_connection && namedByConnection(field.name, headers.headers)) continue;
      if (!writable(field)) continue;
    }
    if (drop_content_length && equalsIgnoreCase(field.name, "content-length")) continue;
    // Names as the core has them: nghttp2 lowercases the copy it makes when the frame is
    // submitted (RFC 9113 §8.2.1 wants lowercase), which saves a copy here.
    nv_.push_back(
        makeNv(field.name, field.value,
               neverRepeats(field.name) ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE));
  }
}

}  // namespace ferry::http::http2
