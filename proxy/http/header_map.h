#pragma once
// HTTP header fields in arrival order. Names keep their case; lookups ignore it (RFC 9110 §5.1).
// RequestHeaders / ResponseHeaders add the request line / status line. Codecs produce them
// (hop-by-hop fields already removed) and consume them; filters read and edit them in place.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/http/header_map_storage.h"

namespace ferry::http {

// `a` and `b` have the same size; true when they differ at most in ASCII letter case.
bool sameSizeEqualsIgnoreCase(std::string_view a, std::string_view b);

// ASCII case-insensitive equality, as field names compare (RFC 9110 §5.1). Inline: it runs for
// every field on every lookup, and most names differ in length from the one looked for.
inline bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && sameSizeEqualsIgnoreCase(a, b);
}

// One field as HeaderMap::fields() shows it: views into the map's storage, valid until the map
// is next changed, moved or destroyed.
struct HeaderField {
  std::string_view name;
  std::string_view value;
};

class HeaderMap {
  // Where one field's name and value sit in bytes_.
  struct Entry {
    uint32_t name_at;
    uint32_t name_size;
    uint32_t value_at;
    uint32_t value_size;
  };
  static HeaderField fieldAt(const Entry& e, const char* bytes) {
    return {std::string_view(bytes + e.name_at, e.name_size),
            std::string_view(bytes + e.value_at, e.value_size)};
  }

 public:
  // The fields in order, read-only. Iterating yields HeaderField values (views, see above).
  class Fields {
   public:
    class Iterator {
     public:
      using iterator_category = std::input_iterator_tag;
      using value_type = HeaderField;
      using difference_type = std::ptrdiff_t;
      using pointer = void;
      using reference = HeaderField;
      Iterator(const Entry* entry, const char* bytes) : entry_(entry), bytes_(bytes) {}
      HeaderField operator*() const { return fieldAt(*entry_, bytes_); }
      Iterator& operator++() {
        ++entry_;
        return *this;
      }
      Iterator operator++(int) {
        Iterator before = *this;
        ++entry_;
        return before;
      }
      bool operator==(const Iterator& other) const { return entry_ == other.entry_; }
      bool operator!=(const Iterator& other) const { return entry_ != other.entry_; }

     private:
      const Entry* entry_;
      const char* bytes_;
    };
    Fields(const Entry* entries, size_t size, const char* bytes)
        : entries_(entries), size_(size), bytes_(bytes) {}
    Iterator begin() const { return {entries_, bytes_}; }
    Iterator end() const { return {entries_ + size_, bytes_}; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    HeaderField operator[](size_t i) const { return fieldAt(entries_[i], bytes_); }
    HeaderField front() const { return (*this)[0]; }
    HeaderField back() const { return (*this)[size_ - 1]; }

   private:
    const Entry* entries_;
    size_t size_;
    const char* bytes_;
  };

  // User-provided on purpose: value-initialising a map (`HeaderMap()`) then calls this instead
  // of first zero-filling the inline storage (~800 bytes). A struct holding a map by value is
  // still zero-filled when value-initialised (std::make_unique<RequestHeaders>()): the codecs
  // create heads with std::make_unique_for_overwrite, which leaves that to the constructors.
  HeaderMap() {}

  // First value of `name`, if present.
  std::optional<std::string_view> get(std::string_view name) const;
  bool has(std::string_view name) const { return get(name).has_value(); }
  size_t count(std::string_view name) const;
  // Appends a field (copying both strings into the map; they may be views into it).
  void add(std::string_view name, std::string_view value);
  // Replaces every field named `name` with one (at the place of the first, keeping its name).
  void set(std::string_view name, std::string_view value);
  // Removes every field named `name`; returns how many were removed.
  size_t remove(std::string_view name);
  // Removes every field for which `predicate(field)` holds, keeping the others in order;
  // returns how many were removed.
  template <typename Predicate>
  size_t removeIf(Predicate predicate) {
    const char* bytes = bytes_.data();
    Entry* entries = entries_.data();
    const size_t size = entries_.size();
    size_t kept = 0;
    for (size_t i = 0; i < size; ++i) {
      if (predicate(fieldAt(entries[i], bytes))) continue;
      entries[kept++] = entries[i];
    }
    entries_.truncate(kept);
    return size - kept;
  }
  // Removes every field, keeping any storage already allocated.
  void clear() {
    entries_.truncate(0);
    bytes_.truncate(0);
    wire_safe_ = false;
  }
  Fields fields() const { return Fields(entries_.data(), entries_.size(), bytes_.data()); }
  size_t size() const { return entries_.size(); }

  // True when every field is known to be fit for an HTTP/1.1 head as it stands: each name is
  // a token, no value holds CR, LF or NUL, and no hop-by-hop field is left (RFC 9110 §5.1,
  // §5.5, §7.6.1). An HTTP/1 codec marks the maps it parsed (it checked all of that), so the
  // encoder on the other side need not check every field again. add() and set() clear the
  // mark (their fields come from filters and are unchecked); removing fields keeps it. A filter
  // may mark a map it built of fields it knows to be fit (a token name, a value checked when
  // the config loaded, no hop-by-hop field): a route's extra fields set on a marked head then
  // leave it marked (filters/router/upstream_request.cc).
  bool wireSafe() const { return wire_safe_; }
  void markWireSafe() { wire_safe_ = true; }

 private:
  // Copies `a` then `b` to the end of bytes_ and returns where `a` starts. Either may point
  // into bytes_ itself.
  uint32_t store(std::string_view a, std::string_view b);

  // Names and values, back to back in arrival order. set() and remove() leave the bytes they
  // replace or drop behind: a head is short-lived, and one allocation-free buffer per head is
  // what makes the map cheap (the usual head fits inline: no heap allocation at all).
  InlineVector<Entry, 16> entries_;
  InlineVector<char, 512> bytes_;
  bool wire_safe_ = false;
};

struct RequestHeaders {
  std::string method;                 // e.g. "GET"
  std::string path;                   // the request target as sent (origin-form: path and query)
  std::string authority;              // Host (HTTP/1.1) or :authority (HTTP/2)
  std::string protocol = "HTTP/1.1";  // as received: "HTTP/1.0", "HTTP/1.1"
  HeaderMap headers;  // end-to-end fields; framing is the codec's (Content-Length kept)
};
using RequestHeadersPtr = std::unique_ptr<RequestHeaders>;

struct ResponseHeaders {
  int status = 200;
  std::string reason;  // optional reason phrase; empty = the standard one
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
