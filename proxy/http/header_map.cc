#include "proxy/http/header_map.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "proxy/http/copy_bytes.h"

namespace ferry::http {

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

constexpr uint64_t kEveryByte = 0x0101010101010101ULL;

// 0x80 in each of the 8 bytes of `w` that is an upper-case ASCII letter (bytes >= 0x80 are
// not). Per byte h = b & 0x7f: h + (0x7f - 'Z') sets the top bit when h > 'Z',
// h + (0x80 - 'A') when h >= 'A'; neither sum carries into the next byte.
uint64_t upperMask(uint64_t w) {
  const uint64_t low7 = w & (0x7f * kEveryByte);
  const uint64_t above_z = low7 + (0x7f - 'Z') * kEveryByte;
  const uint64_t from_a = low7 + (0x80 - 'A') * kEveryByte;
  return from_a & ~above_z & ~w & (0x80 * kEveryByte);
}

// Lower-cases the ASCII letters among 8 bytes at once, leaving every other byte unchanged.
uint64_t lowerWord(uint64_t w) {
  return w | (upperMask(w) >> 2);  // 0x80 >> 2 = 0x20, the ASCII case bit
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

bool hasUpperCase(std::string_view s) {
  const char* p = s.data();
  const size_t size = s.size();
  if (size < sizeof(uint32_t)) {
    for (size_t i = 0; i < size; ++i) {
      if (p[i] >= 'A' && p[i] <= 'Z') return true;
    }
    return false;
  }
  if (size <= sizeof(uint64_t)) return upperMask(loadShortWord(p, size)) != 0;
  const size_t last = size - sizeof(uint64_t);
  for (size_t i = 0; i < last; i += sizeof(uint64_t)) {
    if (upperMask(loadWord(p + i)) != 0) return true;
  }
  return upperMask(loadWord(p + last)) != 0;
}

// sameSizeEqualsIgnoreCase() for a `lowered` that holds no upper-case ASCII letter (a name
// looked for, usually a literal): only `a` needs lowering, one word operation per 8 bytes
// instead of two, and inline in the lookup loops.
[[gnu::always_inline]] inline bool sameSizeEqualsLowercase(const char* a, const char* lowered,
                                                           size_t size) {
  if (size < sizeof(uint32_t)) {
    for (size_t i = 0; i < size; ++i) {
      if (lower(a[i]) != lowered[i]) return false;
    }
    return true;
  }
  if (size <= sizeof(uint64_t)) {
    return lowerWord(loadShortWord(a, size)) == loadShortWord(lowered, size);
  }
  const size_t last = size - sizeof(uint64_t);
  for (size_t i = 0; i < last; i += sizeof(uint64_t)) {
    if (lowerWord(loadWord(a + i)) != loadWord(lowered + i)) return false;
  }
  return lowerWord(loadWord(a + last)) == loadWord(lowered + last);
}

// `name` equals the lower-case literal `lowered` ignoring case.
template <size_t N>
[[gnu::always_inline]] inline bool equalsLowercase(std::string_view name,
                                                   const char (&lowered)[N]) {
  return name.size() == N - 1 && sameSizeEqualsLowercase(name.data(), lowered, N - 1);
}

// One lookup's name, compared first as if it were lower case (callers pass lower-case
// literals): a match that way is a match whatever the name. Only after a field of the same size
// did not match is the name checked for an upper-case letter (once), which then needs the
// two-sided compare.
class NameMatcher {
 public:
  explicit NameMatcher(std::string_view name) : name_(name) {}
  [[gnu::always_inline]] bool matches(const char* candidate, size_t size) const {
    if (size != name_.size()) return false;
    if (sameSizeEqualsLowercase(candidate, name_.data(), size)) return true;
    if (case_ == Case::Unknown) case_ = hasUpperCase(name_) ? Case::Mixed : Case::Lower;
    return case_ == Case::Mixed &&
           sameSizeEqualsIgnoreCase(std::string_view(candidate, size), name_);
  }
  bool matches(std::string_view candidate) const {
    return matches(candidate.data(), candidate.size());
  }

 private:
  enum class Case { Unknown, Lower, Mixed };
  std::string_view name_;
  mutable Case case_ = Case::Unknown;
};

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
  const NameMatcher matcher(name);
  const char* bytes = bytes_.data();
  const Entry* entries = entries_.data();
  for (size_t i = 0, n = entries_.size(); i < n; ++i) {
    const Entry& e = entries[i];
    if (matcher.matches(bytes + e.name_at, e.name_size)) {
      return std::string_view(bytes + e.value_at, e.value_size);
    }
  }
  return std::nullopt;
}

size_t HeaderMap::count(std::string_view name) const {
  const NameMatcher matcher(name);
  size_t n = 0;
  for (const HeaderField& field : fields()) n += matcher.matches(field.name) ? 1 : 0;
  return n;
}

uint32_t HeaderMap::store(std::string_view a, std::string_view b) {
  const size_t used = bytes_.size();
  if (bytes_.fits(a.size() + b.size())) {
    // Nothing moves: `a` and `b` stay valid even if they point into bytes_.
    char* out = bytes_.extend(a.size() + b.size());
    copyBytes(out, a.data(), a.size());
    copyBytes(out + a.size(), b.data(), b.size());
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
  const NameMatcher matcher(name);
  size_t first = 0;
  while (first < size && !matcher.matches(fieldAt(entries[first], bytes).name)) ++first;
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
    if (matcher.matches(fieldAt(entries[i], bytes).name)) continue;
    entries[kept++] = entries[i];
  }
  entries_.truncate(kept);
}

size_t HeaderMap::remove(std::string_view name) {
  const NameMatcher matcher(name);
  return removeIf([&](const HeaderField& f) { return matcher.matches(f.name); });
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
      return equalsLowercase(name, "te");
    case 7:
      return equalsLowercase(name, "trailer") || equalsLowercase(name, "upgrade");
    case 10:
      return equalsLowercase(name, "connection") || equalsLowercase(name, "keep-alive");
    // The obsolete Proxy-Connection that some clients still send.
    case 16:
      return equalsLowercase(name, "proxy-connection");
    case 17:
      return equalsLowercase(name, "transfer-encoding");
    default:
      return false;
  }
}

bool isForbiddenTrailer(std::string_view name) {
  return name.empty() || name.front() == ':' || isHopByHopHeader(name) ||
         equalsLowercase(name, "content-length") || equalsLowercase(name, "host");
}

}  // namespace ferry::http
