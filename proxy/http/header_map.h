#pragma once
// HTTP header fields in arrival order. Names keep their case; lookups ignore it (RFC 9110 §5.1).
// RequestHeaders / ResponseHeaders add the request line / status line. Codecs produce them
// (hop-by-hop fields already removed) and consume them; filters read and edit them in place.

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry::http {

// `a` and `b` have the same size; true when they differ at most in ASCII letter case.
bool sameSizeEqualsIgnoreCase(std::string_view a, std::string_view b);

// ASCII case-insensitive equality, as field names compare (RFC 9110 §5.1). Inline: it runs for
// every field on every lookup, and most names differ in length from the one looked for.
inline bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && sameSizeEqualsIgnoreCase(a, b);
}

struct HeaderField {
  std::string name;
  std::string value;
};

class HeaderMap {
 public:
  // First value of `name`, if present.
  std::optional<std::string_view> get(std::string_view name) const;
  bool has(std::string_view name) const { return get(name).has_value(); }
  size_t count(std::string_view name) const;
  // Appends a field (copying both strings into it).
  void add(std::string_view name, std::string_view value);
  // Replaces every field named `name` with one.
  void set(std::string_view name, std::string value);
  // Removes every field named `name`; returns how many were removed.
  size_t remove(std::string_view name);
  // Removes every field for which `predicate(field)` holds, keeping the others in order;
  // returns how many were removed.
  template <typename Predicate>
  size_t removeIf(Predicate predicate) {
    auto rest = std::remove_if(fields_.begin(), fields_.end(), predicate);
    const size_t removed = static_cast<size_t>(fields_.end() - rest);
    fields_.erase(rest, fields_.end());
    return removed;
  }
  const std::vector<HeaderField>& fields() const { return fields_; }
  size_t size() const { return fields_.size(); }

  // True when every field is known to be fit for an HTTP/1.1 head as it stands: each name is
  // a token, no value holds CR, LF or NUL, and no hop-by-hop field is left (RFC 9110 §5.1,
  // §5.5, §7.6.1). An HTTP/1 codec marks the maps it parsed (it checked all of that), so the
  // encoder on the other side need not check every field again. add() and set() clear the
  // mark (their fields come from filters and are unchecked); removing fields keeps it.
  bool wireSafe() const { return wire_safe_; }
  void markWireSafe() { wire_safe_ = true; }

 private:
  std::vector<HeaderField> fields_;
  bool wire_safe_ = false;
};

struct RequestHeaders {
  std::string method;   // e.g. "GET"
  std::string path;     // the request target as sent (origin-form: path and query)
  std::string authority;  // Host (HTTP/1.1) or :authority (HTTP/2)
  std::string protocol = "HTTP/1.1";  // as received: "HTTP/1.0", "HTTP/1.1"
  HeaderMap headers;    // end-to-end fields; framing is the codec's (Content-Length kept)
};
using RequestHeadersPtr = std::unique_ptr<RequestHeaders>;

struct ResponseHeaders {
  int status = 200;
  std::string reason;   // optional reason phrase; empty = the standard one
  HeaderMap headers;
};
using ResponseHeadersPtr = std::unique_ptr<ResponseHeaders>;

// Standard reason phrase for a status code ("OK", "Conflict", ...; "" when unknown).
std::string_view reasonPhrase(int status);

// True for the hop-by-hop fields of RFC 9110 §7.6.1 (Connection, Keep-Alive, Proxy-Connection,
// TE, Trailer, Transfer-Encoding, Upgrade), case-insensitive.
bool isHopByHopHeader(std::string_view name);

// True for fields ferry never passes on in a trailer section: the hop-by-hop ones, and those
// that frame or route the message, which a recipient needs before the content (RFC 9110
// §6.5.1: Content-Length, Host), and pseudo-header names.
bool isForbiddenTrailer(std::string_view name);

}  // namespace ferry::http
