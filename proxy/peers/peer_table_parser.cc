#include "proxy/peers/peer_table_parser.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "rapidjson/memorystream.h"

namespace ferry::peers {
namespace {

constexpr size_t kMaxQuotedLength = 200;

// A value quoted for an error message: escapes quotes, backslashes and non-printable bytes, so
// a hostile publication can't forge log lines; long values are cut.
std::string quote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kMaxQuotedLength; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMaxQuotedLength) {
    out += "...";
  }
  return out + "\"";
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

bool isIpv4Literal(const std::string& s) {
  in_addr addr;
  return inet_pton(AF_INET, s.c_str(), &addr) == 1;
}

bool isIpv6Literal(const std::string& s) {
  in6_addr addr;
  return inet_pton(AF_INET6, s.c_str(), &addr) == 1;
}

// True when `s` has only digits and dots: it is meant as an IPv4 literal, so it must be one
// (RFC 3986 section 3.2.2 lets "1.2.3" be a reg-name; resolvers disagree on it, so refuse).
bool looksNumeric(std::string_view s) {
  return s.find_first_not_of("0123456789.") == std::string_view::npos;
}

// A DNS-style reg-name: letters, digits, '-', '_' in dot-separated non-empty labels. Stricter
// than RFC 3986 (no percent-encoding, no sub-delims) on purpose: peers are DNS names.
bool isValidRegName(std::string_view s) {
  if (s.empty() || s.size() > 253 || s.front() == '.' || s.back() == '.' ||
      s.find("..") != std::string_view::npos) {
    return false;
  }
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) {
      return false;
    }
  }
  return true;
}

// `host` (lower case, IPv6 without brackets) against the domain allow-list.
bool hostAllowed(const std::string& host, bool is_ip, const std::vector<std::string>& domains) {
  for (const std::string& raw : domains) {
    std::string d = lower(raw);
    if (d.size() >= 2 && d.front() == '[' && d.back() == ']') {
      d = d.substr(1, d.size() - 2);
    }
    if (host == d) {
      return true;
    }
    if (!is_ip && host.size() > d.size() + 1 && host.ends_with(d) &&
        host[host.size() - d.size() - 1] == '.') {
      return true;
    }
  }
  return false;
}

StatusOr<uint16_t> parsePort(std::string_view s, std::string_view url) {
  if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string_view::npos) {
    return invalidArgument("port must be 1..65535 in " + quote(url));
  }
  uint32_t port = 0;
  for (char c : s) {
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port == 0 || port > 65535) {
    return invalidArgument("port must be 1..65535 in " + quote(url));
  }
  return static_cast<uint16_t>(port);
}

const char* jsonTypeName(const rapidjson::Value& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType:
      return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return "boolean";
    case rapidjson::kObjectType:
      return "object";
    case rapidjson::kArrayType:
      return "array";
    case rapidjson::kStringType:
      return "string";
    case rapidjson::kNumberType:
      return "number";
  }
  return "unknown";
}

Status withEntry(std::string_view name, const Status& status) {
  return invalidArgument(std::string(name) + ": " + status.message());
}

}  // namespace

StatusOr<PeerOrigin> parseOrigin(std::string_view url, const PeerPolicy& policy) {
  if (url.empty()) {
    return invalidArgument("empty origin");
  }
  for (char c : url) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) {
      return invalidArgument("invalid character in " + quote(url));
    }
  }
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0) {
    return invalidArgument("not an origin (want https://host[:port]) " + quote(url));
  }
  PeerOrigin origin;
  origin.scheme = lower(url.substr(0, sep));
  if (origin.scheme != "https" && origin.scheme != "http") {
    return invalidArgument("scheme must be https or http in " + quote(url));
  }
  if (origin.scheme == "http" && !policy.allow_http) {
    return invalidArgument("http not allowed (https only; see allow_http_peers) in " + quote(url));
  }

  // RFC 3986 section 3.2: the authority ends at the first "/", "?" or "#".
  const std::string_view rest = url.substr(sep + 3);
  const size_t authority_end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, authority_end);
  const std::string_view tail =
      authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);
  if (authority.find('@') != std::string_view::npos) {
    return invalidArgument("userinfo not allowed in " + quote(url));
  }
  if (tail.find('#') != std::string_view::npos) {
    return invalidArgument("fragment not allowed in " + quote(url));
  }
  if (tail.find('?') != std::string_view::npos) {
    return invalidArgument("query not allowed in " + quote(url));
  }
  if (!tail.empty() && tail != "/") {
    return invalidArgument("path not allowed in " + quote(url));
  }
  if (authority.empty()) {
    return invalidArgument("missing host in " + quote(url));
  }

  std::string_view port_text;
  bool has_port = false;
  bool is_ip = false;
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    origin.host = lower(authority.substr(1, close == std::string_view::npos ? 0 : close - 1));
    if (close == std::string_view::npos || !isIpv6Literal(origin.host)) {
      return invalidArgument("invalid IPv6 literal in " + quote(url));
    }
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      return invalidArgument("invalid authority in " + quote(url));
    }
    has_port = !after.empty();
    port_text = has_port ? after.substr(1) : std::string_view();
    is_ip = true;
  } else {
    const size_t colon = authority.find(':');
    origin.host = lower(authority.substr(0, colon));
    has_port = colon != std::string_view::npos;
    port_text = has_port ? authority.substr(colon + 1) : std::string_view();
    if (origin.host.empty()) {
      return invalidArgument("missing host in " + quote(url));
    }
    if (looksNumeric(origin.host)) {
      if (!isIpv4Literal(origin.host)) {
        return invalidArgument("invalid IPv4 literal in " + quote(url));
      }
      is_ip = true;
    } else if (!isValidRegName(origin.host)) {
      return invalidArgument("invalid host in " + quote(url));
    }
  }

  if (has_port) {
    auto port = parsePort(port_text, url);
    if (!port.isOk()) {
      return port.status();
    }
    origin.port = *port;
  } else {
    origin.port = origin.scheme == "https" ? 443 : 80;
  }

  if (!policy.domains.empty() && !hostAllowed(origin.host, is_ip, policy.domains)) {
    return invalidArgument("host " + quote(origin.host) + " not in peer_domains in " + quote(url));
  }
  return origin;
}

StatusOr<std::map<std::string, PeerOrigin>> parsePeerMap(
    const std::map<std::string, std::string>& peers, const PeerPolicy& policy) {
  std::map<std::string, PeerOrigin> out;
  for (const auto& [name, url] : peers) {
    if (!isValidInstanceName(name)) {
      return invalidArgument(quote(name) + ": not a valid instance name (RFC 9110 token, 1..128)");
    }
    auto origin = parseOrigin(url, policy);
    if (!origin.isOk()) {
      return withEntry(name, origin.status());
    }
    out.emplace(name, std::move(*origin));
  }
  return out;
}

StatusOr<std::map<std::string, PeerOrigin>> parseFleetUrls(std::string_view json,
                                                           const PeerPolicy& policy) {
  rapidjson::Document doc;
  // RapidJSON's streams answer '\0' at their end, so its own "nothing after the root" check
  // stops at a NUL byte: `{...}\0garbage` would pass. Parse the root alone, then require that
  // only JSON whitespace (RFC 8259 section 2) follows it, up to the real end of the text.
  rapidjson::MemoryStream stream(json.data(), json.size());
  doc.ParseStream<rapidjson::kParseStopWhenDoneFlag, rapidjson::UTF8<>>(stream);
  if (doc.HasParseError()) {
    return invalidArgument("invalid JSON at offset " + std::to_string(doc.GetErrorOffset()) + ": " +
                           rapidjson::GetParseError_En(doc.GetParseError()));
  }
  const size_t rest = json.find_first_not_of(" \t\n\r", stream.Tell());
  if (rest != std::string_view::npos) {
    return invalidArgument("invalid JSON at offset " + std::to_string(rest) +
                           ": The document root must not be followed by other values.");
  }
  if (!doc.IsObject()) {
    return invalidArgument(std::string("fleet urls must be a JSON object of instance name to "
                                       "origin (got ") +
                           jsonTypeName(doc) + ")");
  }
  std::map<std::string, std::string> peers;
  for (const auto& member : doc.GetObject()) {
    const std::string name(member.name.GetString(), member.name.GetStringLength());
    if (!member.value.IsString()) {
      return invalidArgument(quote(name) + ": origin must be a string (got " +
                             jsonTypeName(member.value) + ")");
    }
    // RapidJSON keeps repeated keys; two origins for one name is an ambiguous publication.
    if (!peers.emplace(name, std::string(member.value.GetString(), member.value.GetStringLength()))
             .second) {
      return invalidArgument(quote(name) + ": duplicate name");
    }
  }
  return parsePeerMap(peers, policy);
}

StatusOr<std::map<std::string, PeerOrigin>> loadFleetFile(const std::string& path,
                                                          const PeerPolicy& policy) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return invalidArgument("cannot read " + quote(path) + ": is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return notFound("cannot read " + quote(path) + ": " + std::strerror(errno));
  }
  std::string json;
  char chunk[16384];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    json.append(chunk, static_cast<size_t>(in.gcount()));
    if (json.size() > kMaxFleetFileBytes) {
      return invalidArgument(quote(path) + ": larger than " + std::to_string(kMaxFleetFileBytes) +
                             " bytes");
    }
  }
  if (in.bad()) {
    return internalError("cannot read " + quote(path) + ": " + std::strerror(errno));
  }
  return parseFleetUrls(json, policy);
}

Status validatePeerDomain(std::string_view domain) {
  std::string d = lower(domain);
  if (d.size() >= 2 && d.front() == '[' && d.back() == ']') {
    return isIpv6Literal(d.substr(1, d.size() - 2))
               ? Status::ok()
               : invalidArgument("invalid IPv6 literal " + quote(domain));
  }
  if (isIpv6Literal(d) || isIpv4Literal(d)) {
    return Status::ok();
  }
  if (looksNumeric(d)) {
    return invalidArgument("invalid IPv4 literal " + quote(domain));
  }
  if (!isValidRegName(d)) {
    return invalidArgument("invalid domain " + quote(domain) +
                           " (a DNS name such as example.com, or an IP literal)");
  }
  return Status::ok();
}

}  // namespace ferry::peers
