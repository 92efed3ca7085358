#include "proxy/http/http1/request_target.h"

#include <arpa/inet.h>

#include <array>
#include <string>
#include <string_view>

#include "proxy/http/header_map.h"

namespace ferry::http::http1 {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isHex(char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// unreserved / sub-delims (RFC 3986 §2.2, §2.3), as a table: every request's Host is checked.
constexpr std::array<bool, 256> kRegNameChar = [] {
  std::array<bool, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (char c : std::string_view("-._~!$&'()*+,;=")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

bool isRegNameChar(char c) { return kRegNameChar[static_cast<unsigned char>(c)]; }

// reg-name = *( unreserved / pct-encoded / sub-delims ); IPv4address is a reg-name too.
bool isRegName(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return false;
      if (!isHex(s[i + 1]) || !isHex(s[i + 2])) return false;
      i += 2;
      continue;
    }
    if (!isRegNameChar(s[i])) return false;
  }
  return true;
}

// IP-literal = "[" ( IPv6address / IPvFuture ) "]" (RFC 3986 §3.2.2), without the brackets.
bool isIpLiteral(std::string_view s) {
  if (s.size() >= 2 && (s[0] == 'v' || s[0] == 'V')) {
    // IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
    size_t dot = s.find('.');
    if (dot == std::string_view::npos || dot < 2 || dot + 1 == s.size()) return false;
    for (size_t i = 1; i < dot; ++i) {
      if (!isHex(s[i])) return false;
    }
    for (size_t i = dot + 1; i < s.size(); ++i) {
      if (!isRegNameChar(s[i]) && s[i] != ':') return false;
    }
    return true;
  }
  if (s.empty() || s.size() > 45) return false;
  std::string text(s);
  in6_addr address{};
  return inet_pton(AF_INET6, text.c_str(), &address) == 1;
}

}  // namespace

bool isValidHost(std::string_view host) {
  std::string_view name = host;
  std::string_view port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos || !isIpLiteral(host.substr(1, close - 1))) return false;
    std::string_view rest = host.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port = rest.substr(1);
    }
    name = {};
  } else if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    name = host.substr(0, colon);
    port = host.substr(colon + 1);
  }
  if (!isRegName(name)) return false;
  for (char c : port) {
    if (!isDigit(c)) return false;
  }
  return true;
}

RequestTarget parseRequestTarget(std::string_view target) {
  RequestTarget out;
  if (!target.empty() && target.front() == '/') {
    out.form = RequestTarget::Form::Origin;
    return out;
  }
  if (target == "*") {
    out.form = RequestTarget::Form::Asterisk;
    return out;
  }
  // absolute-URI = scheme ":" hier-part [ "?" query ] (RFC 3986 §4.3); ferry forwards only
  // the http and https schemes, whose URIs always carry "//" authority (RFC 9110 §4.2).
  const size_t colon = target.find(':');
  if (colon == std::string_view::npos) return out;
  const std::string_view scheme = target.substr(0, colon);
  if (!equalsIgnoreCase(scheme, "http") && !equalsIgnoreCase(scheme, "https")) return out;
  std::string_view rest = target.substr(colon + 1);
  if (rest.substr(0, 2) != "//") return out;
  rest.remove_prefix(2);
  const size_t end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, end);
  // RFC 9110 §4.2.1: an http(s) URI with an empty host is invalid; userinfo is deprecated
  // there and a known way to disguise the host, so both are refused.
  if (authority.empty() || authority.find('@') != std::string_view::npos) return out;
  if (authority.front() == ':' || !isValidHost(authority)) return out;
  std::string_view path = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (!path.empty() && path.front() == '#') return out;  // no fragment in a request-target
  out.form = RequestTarget::Form::Absolute;
  out.authority = authority;
  // RFC 9112 §3.2.1: an empty path is sent as "/".
  out.origin_form =
      path.empty() || path.front() != '/' ? "/" + std::string(path) : std::string(path);
  return out;
}

}  // namespace ferry::http::http1
