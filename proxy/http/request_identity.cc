#include "proxy/http/request_identity.h"

#include <random>
#include <vector>

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
// 32 lowercase hex digits into `out`. Seeded once per thread (a worker), then a counter:
// cheaper than a random draw per request, and ids stay distinct within the process even if two
// threads drew the same prefix only with negligible probability (64 random bits). Hex by hand:
// snprintf cost more than the rest of the request's identity work together (callgrind,
// bench/passthrough/profile.sh).
void writeRequestId(char* out) {
  thread_local const uint64_t prefix = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  thread_local uint64_t counter = 0;
  static constexpr char kHex[] = "0123456789abcdef";
  const uint64_t halves[2] = {prefix, ++counter};
  for (int h = 0; h < 2; ++h) {
    uint64_t v = halves[h];
    for (int i = 15; i >= 0; --i) {
      out[h * 16 + i] = kHex[v & 0xf];
      v >>= 4;
    }
  }
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
