#include "proxy/http/request_identity.h"

#include <cstdio>
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

std::string generateRequestId() {
  // Seeded once per thread (a worker), then a counter: cheaper than a random draw per request,
  // and ids stay distinct within the process even if two threads drew the same prefix only
  // with negligible probability (64 random bits).
  thread_local const uint64_t prefix = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  thread_local uint64_t counter = 0;
  char out[33];
  std::snprintf(out, sizeof(out), "%016llx%016llx", static_cast<unsigned long long>(prefix),
                static_cast<unsigned long long>(++counter));
  return std::string(out, 32);
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
  auto id = headers.get(kRequestIdHeader);
  if (!id || headers.count(kRequestIdHeader) != 1 || !isValidRequestId(*id)) {
    headers.set(std::string(kRequestIdHeader), generateRequestId());
  }
  if (!config.x_forwarded) {
    if (wire_safe) headers.markWireSafe();
    return;
  }

  std::vector<std::string> kept = trustedEntries(headers, config.trusted_hops);
  std::string xff;
  for (const auto& entry : kept) {
    xff += entry;
    xff += ", ";
  }
  std::string_view client = addressWithoutPort(client_address);
  xff += client.empty() ? std::string_view("unknown") : client;
  headers.set("x-forwarded-for", std::move(xff));

  auto proto = headers.get("x-forwarded-proto");
  const bool keep_proto =
      config.trusted_hops > 0 && proto && headers.count("x-forwarded-proto") == 1;
  if (!keep_proto) headers.set("x-forwarded-proto", tls ? "https" : "http");
  if (wire_safe) headers.markWireSafe();
}

}  // namespace ferry::http
