#include "proxy/http/request_identity.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace ferry::http {

bool isValidRequestId(std::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdBytes) return false;
  for (char c : id) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x21 || u > 0x7e) return false;
  }
  return true;
}

namespace {

// The 16 lowercase hex digits of `v`, most significant first. With SSE2: one nibble per byte,
// then '0'..'9' or 'a'..'f' for all 16 at once (a loop costs ~9 instructions a digit).
void writeHex16(char* out, uint64_t v) {
#if defined(__SSE2__) && defined(__x86_64__)
  const __m128i bytes = _mm_cvtsi64_si128(static_cast<long long>(__builtin_bswap64(v)));
  const __m128i low4 = _mm_set1_epi8(0x0f);
  const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
  const __m128i low = _mm_and_si128(bytes, low4);
  const __m128i nibbles = _mm_unpacklo_epi8(high, low);
  const __m128i letters =
      _mm_and_si128(_mm_cmpgt_epi8(nibbles, _mm_set1_epi8(9)), _mm_set1_epi8('a' - '0' - 10));
  const __m128i hex = _mm_add_epi8(_mm_add_epi8(nibbles, _mm_set1_epi8('0')), letters);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), hex);
#else
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i) {
    out[i] = kHex[v & 0xf];
    v >>= 4;
  }
#endif
}

// 32 lowercase hex digits into `out`. Seeded once per thread (a worker), then a counter:
// cheaper than a random draw per request, and ids stay distinct within the process even if two
// threads drew the same prefix only with negligible probability (64 random bits). Hex by hand:
// snprintf cost more than the rest of the request's identity work together (callgrind,
// bench/passthrough/profile.sh); the prefix's digits are written once per thread.
void writeRequestId(char* out) {
  thread_local const std::array<char, 16> prefix = [] {
    std::random_device device;
    std::array<char, 16> hex;
    writeHex16(hex.data(), (static_cast<uint64_t>(device()) << 32) ^ device());
    return hex;
  }();
  thread_local uint64_t counter = 0;
  std::memcpy(out, prefix.data(), prefix.size());
  writeHex16(out + prefix.size(), ++counter);
}

}  // namespace

std::string generateRequestId() {
  std::string out(32, '0');
  writeRequestId(out.data());
  return out;
}

std::string_view addressWithoutPort(std::string_view address) {
  if (!address.empty() && address.front() == '[') {
    auto close = address.find(']');
    return close == std::string_view::npos ? address : address.substr(1, close - 1);
  }
  auto colon = address.rfind(':');
  return colon == std::string_view::npos ? address : address.substr(0, colon);
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The last `keep` entries of every X-Forwarded-For field, in order (RFC 9110 §5.3: several
// fields of a list are one comma-separated list).
std::vector<std::string> trustedEntries(const HeaderMap& headers, uint32_t keep) {
  std::vector<std::string> entries;
  if (keep == 0) return entries;
  for (const auto& field : headers.fields()) {
    if (!equalsIgnoreCase(field.name, "x-forwarded-for")) continue;
    std::string_view rest = field.value;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      std::string_view item = trim(rest.substr(0, comma));
      if (!item.empty()) entries.emplace_back(item);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  if (entries.size() > keep) entries.erase(entries.begin(), entries.end() - keep);
  return entries;
}

}  // namespace

void applyRequestIdentity(RequestHeaders& request, const RequestIdentityConfig& config,
                          std::string_view client_address, bool tls) {
  HeaderMap& headers = request.headers;
  // Every value written here is fit for the wire (hex digits, a checked id, address text, XFF
  // entries the codec already checked): a head the codec marked stays marked, so the encoder
  // need not check every field again.
  const bool wire_safe = headers.wireSafe();
  // One pass over the fields; the usual head has none of the three, and then each is one add().
  size_t ids = 0;
  size_t xffs = 0;
  size_t xfps = 0;
  std::string_view id;
  for (const auto& field : headers.fields()) {
    if (equalsIgnoreCase(field.name, kRequestIdHeader)) {
      ++ids;
      id = field.value;
    } else if (equalsIgnoreCase(field.name, "x-forwarded-for")) {
      ++xffs;
    } else if (equalsIgnoreCase(field.name, "x-forwarded-proto")) {
      ++xfps;
    }
  }
  if (ids != 1 || !isValidRequestId(id)) {
    char fresh[32];
    writeRequestId(fresh);
    if (ids == 0) {
      headers.add(kRequestIdHeader, std::string_view(fresh, sizeof(fresh)));
    } else {
      headers.set(kRequestIdHeader, std::string(fresh, sizeof(fresh)));
    }
  }
  if (!config.x_forwarded) {
    if (wire_safe) headers.markWireSafe();
    return;
  }

  std::string_view client = addressWithoutPort(client_address);
  if (client.empty()) client = "unknown";
  if (xffs == 0) {
    headers.add("x-forwarded-for", client);
  } else {
    std::string xff;
    for (const auto& entry : trustedEntries(headers, config.trusted_hops)) {
      xff += entry;
      xff += ", ";
    }
    xff += client;
    headers.set("x-forwarded-for", std::move(xff));
  }
  const std::string_view scheme = tls ? "https" : "http";
  if (xfps == 0) {
    headers.add("x-forwarded-proto", scheme);
  } else if (config.trusted_hops == 0 || xfps != 1) {
    headers.set("x-forwarded-proto", std::string(scheme));
  }
  if (wire_safe) headers.markWireSafe();
}

}  // namespace ferry::http
