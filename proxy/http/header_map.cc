#include "proxy/http/header_map.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ferry::http {

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

constexpr uint64_t kEveryByte = 0x0101010101010101ULL;

// Lower-cases the ASCII letters among 8 bytes at once, leaving every other byte (including
// bytes >= 0x80) unchanged. Per byte h = b & 0x7f: h + (0x7f - 'Z') sets the top bit when
// h > 'Z', h + (0x80 - 'A') when h >= 'A'; neither sum carries into the next byte.
uint64_t lowerWord(uint64_t w) {
  const uint64_t low7 = w & (0x7f * kEveryByte);
  const uint64_t above_z = low7 + (0x7f - 'Z') * kEveryByte;
  const uint64_t from_a = low7 + (0x80 - 'A') * kEveryByte;
  const uint64_t upper = from_a & ~above_z & ~w & (0x80 * kEveryByte);
  return w | (upper >> 2);  // 0x80 >> 2 = 0x20, the ASCII case bit
}

uint64_t loadWord(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof(w));
  return w;
}

// The first and the last 4 of `size` (4 to 8) bytes, as one word; middle bytes may repeat.
uint64_t loadShortWord(const char* p, size_t size) {
  uint32_t first;
  uint32_t last;
  std::memcpy(&first, p, sizeof(first));
  std::memcpy(&last, p + size - sizeof(last), sizeof(last));
  return first | (static_cast<uint64_t>(last) << 32);
}

[[gnu::always_inline]] inline bool sameIgnoringCase(uint64_t a, uint64_t b) {
  return a == b || lowerWord(a) == lowerWord(b);
}

}  // namespace

bool sameSizeEqualsIgnoreCase(std::string_view a, std::string_view b) {
  // Field names are compared on every lookup: 8 bytes at a time, with overlapping loads for
  // the last partial word, so most names take one or two word compares.
  const size_t size = a.size();
  const char* pa = a.data();
  const char* pb = b.data();
  if (size < sizeof(uint32_t)) {
    for (size_t i = 0; i < size; ++i) {
      if (pa[i] != pb[i] && lower(pa[i]) != lower(pb[i])) return false;
    }
    return true;
  }
  if (size <= sizeof(uint64_t)) {
    return sameIgnoringCase(loadShortWord(pa, size), loadShortWord(pb, size));
  }
  const size_t last = size - sizeof(uint64_t);
  for (size_t i = 0; i < last; i += sizeof(uint64_t)) {
    if (!sameIgnoringCase(loadWord(pa + i), loadWord(pb + i))) return false;
  }
  return sameIgnoringCase(loadWord(pa + last), loadWord(pb + last));
}

std::optional<std::string_view> HeaderMap::get(std::string_view name) const {
  const char* bytes = bytes_.data();
  const Entry* entries = entries_.data();
  for (size_t i = 0, n = entries_.size(); i < n; ++i) {
    const Entry& e = entries[i];
    if (e.name_size == name.size() &&
        sameSizeEqualsIgnoreCase(std::string_view(bytes + e.name_at, e.name_size), name)) {
      return std::string_view(bytes + e.value_at, e.value_size);
    }
  }
  return std::nullopt;
}

size_t HeaderMap::count(std::string_view name) const {
  size_t n = 0;
  for (const HeaderField& field : fields()) n += equalsIgnoreCase(field.name, name) ? 1 : 0;
  return n;
}

uint32_t HeaderMap::store(std::string_view a, std::string_view b) {
  const size_t used = bytes_.size();
  if (bytes_.fits(a.size() + b.size())) {
    // Nothing moves: `a` and `b` stay valid even if they point into bytes_.
    char* out = bytes_.extend(a.size() + b.size());
    if (!a.empty()) std::memcpy(out, a.data(), a.size());
    if (!b.empty()) std::memcpy(out + a.size(), b.data(), b.size());
    return static_cast<uint32_t>(used);
  }
  // A view into bytes_ would dangle once extend() moves the bytes to the heap: remember it as
  // an offset and copy from the new place.
  const char* old = bytes_.data();
  auto offsetIn = [&](std::string_view s) -> std::optional<size_t> {
    const auto p = reinterpret_cast<uintptr_t>(s.data());
    const auto begin = reinterpret_cast<uintptr_t>(old);
    if (s.empty() || p < begin || p >= begin + used) return std::nullopt;
    return p - begin;
  };
  const std::optional<size_t> a_at = offsetIn(a);
  const std::optional<size_t> b_at = offsetIn(b);
  char* out = bytes_.extend(a.size() + b.size());
  const char* base = bytes_.data();
  if (!a.empty()) std::memcpy(out, a_at ? base + *a_at : a.data(), a.size());
  if (!b.empty()) std::memcpy(out + a.size(), b_at ? base + *b_at : b.data(), b.size());
  return static_cast<uint32_t>(used);
}

void HeaderMap::add(std::string_view name, std::string_view value) {
  wire_safe_ = false;
  // Codecs add every field of every head through here: one copy into bytes_, no allocation
  // while the head fits inline.
  const uint32_t at = store(name, value);
  const auto name_size = static_cast<uint32_t>(name.size());
  entries_.push_back(Entry{at, name_size, at + name_size, static_cast<uint32_t>(value.size())});
}

void HeaderMap::set(std::string_view name, std::string_view value) {
  wire_safe_ = false;
  // Keep the position (and the name as first written) of the first occurrence so a replaced
  // field does not move.
  const char* bytes = bytes_.data();
  Entry* entries = entries_.data();
  const size_t size = entries_.size();
  size_t first = 0;
  while (first < size && !equalsIgnoreCase(fieldAt(entries[first], bytes).name, name)) ++first;
  if (first == size) {
    add(name, value);
    return;
  }
  const uint32_t at = store(std::string_view(), value);
  entries = entries_.data();
  bytes = bytes_.data();
  entries[first].value_at = at;
  entries[first].value_size = static_cast<uint32_t>(value.size());
  size_t kept = first + 1;
  for (size_t i = first + 1; i < size; ++i) {
    if (equalsIgnoreCase(fieldAt(entries[i], bytes).name, name)) continue;
    entries[kept++] = entries[i];
  }
  entries_.truncate(kept);
}

size_t HeaderMap::remove(std::string_view name) {
  return removeIf([&](const HeaderField& f) { return equalsIgnoreCase(f.name, name); });
}

std::string_view reasonPhrase(int status) {
  // RFC 9110 §15 (plus 429 from RFC 6585).
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 103:
      return "Early Hints";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 203:
      return "Non-Authoritative Information";
    case 204:
      return "No Content";
    case 205:
      return "Reset Content";
    case 206:
      return "Partial Content";
    case 300:
      return "Multiple Choices";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Range Not Satisfiable";
    case 417:
      return "Expectation Failed";
    case 421:
      return "Misdirected Request";
    case 422:
      return "Unprocessable Content";
    case 426:
      return "Upgrade Required";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "";
  }
}

bool isHopByHopHeader(std::string_view name) {
  // Called for every field of every head: most names differ in length from all seven.
  switch (name.size()) {
    case 2:
      return equalsIgnoreCase(name, "te");
    case 7:
      return equalsIgnoreCase(name, "trailer") || equalsIgnoreCase(name, "upgrade");
    case 10:
      return equalsIgnoreCase(name, "connection") || equalsIgnoreCase(name, "keep-alive");
    // The obsolete Proxy-Connection that some clients still send.
    case 16:
      return equalsIgnoreCase(name, "proxy-connection");
    case 17:
      return equalsIgnoreCase(name, "transfer-encoding");
    default:
      return false;
  }
}

bool isForbiddenTrailer(std::string_view name) {
  return name.empty() || name.front() == ':' || isHopByHopHeader(name) ||
         equalsIgnoreCase(name, "content-length") || equalsIgnoreCase(name, "host");
}

}  // namespace ferry::http
