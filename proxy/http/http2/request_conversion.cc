#include "proxy/http/http2/request_conversion.h"

#include <llhttp.h>

#include <string_view>
#include <utility>

namespace ferry::http::http2 {

namespace {

// The methods llhttp knows: the HTTP/1.1 listener answers any other with 501 (RFC 9110 §9.1),
// and HTTP/2 requests get the same answer (nghttp2 checked only that it is a token).
#define FERRY_HTTP2_METHOD_NAME(num, name, string) #string,
constexpr std::string_view kKnownMethods[] = {HTTP_METHOD_MAP(FERRY_HTTP2_METHOD_NAME)};
#undef FERRY_HTTP2_METHOD_NAME

bool knownMethod(std::string_view method) {
  for (std::string_view known : kKnownMethods) {
    if (method == known) return true;
  }
  return false;
}

// RFC 3986 §6.2.3: an empty port, or the scheme's default one, is the same as no port.
std::string_view withoutDefaultPort(std::string_view authority, std::string_view scheme) {
  const size_t colon = authority.rfind(':');
  // No port, or the colon is inside an IPv6 literal ("[::1]").
  if (colon == std::string_view::npos || authority.find(']', colon) != std::string_view::npos) {
    return authority;
  }
  const std::string_view port = authority.substr(colon + 1);
  if (port.empty() || (port == "80" && scheme == "http") || (port == "443" && scheme == "https")) {
    return authority.substr(0, colon);
  }
  return authority;
}

// RFC 9113 §8.3.1 compares Host and :authority after normalisation (RFC 3986 §6.2): the host
// is case-insensitive (§3.2.2) and a default port is no port.
bool sameAuthority(std::string_view a, std::string_view b, std::string_view scheme) {
  return equalsIgnoreCase(withoutDefaultPort(a, scheme), withoutDefaultPort(b, scheme));
}

}  // namespace

void RequestHeadBuilder::addField(std::string_view name, std::string_view value) {
  bytes_ += name.size() + value.size();
  const bool pseudo = !name.empty() && name.front() == ':';
  if (!pseudo) ++fields_;
  if (bytes_ > max_bytes_ || fields_ > max_fields_) return;

  if (pseudo) {
    // nghttp2 let through only :method, :scheme, :path, :authority, each once, all before the
    // first regular field (RFC 9113 §8.3).
    if (name == ":method") {
      head_->method = value;
    } else if (name == ":path") {
      head_->path = value;
    } else if (name == ":authority") {
      head_->authority = value;
      has_authority_ = true;
    } else if (name == ":scheme") {
      // Only to compare a Host field with :authority: the upstream leg has its own scheme.
      scheme_ = value;
    }
    return;
  }
  // HTTP/1.1 needs Host (RFC 9112 §3.2), first by custom: made from :authority ahead of the
  // regular fields.
  if (has_authority_ && !has_host_) {
    head_->headers.add("host", head_->authority);
    has_host_ = true;
  }
  if (name == "cookie") {
    if (!cookie_.empty()) cookie_.append("; ");
    cookie_.append(value);
    return;
  }
  if (name == "host") {
    // RFC 9113 §8.3.1: a Host naming another entity than :authority makes the request
    // malformed (the upstream and ferry's own checks would otherwise disagree on the target).
    // The same one is dropped: Host was made from :authority already (nghttp2 refuses a second
    // host field).
    if (has_authority_) {
      if (!sameAuthority(value, head_->authority, scheme_)) host_differs_ = true;
      return;
    }
    head_->authority = value;
    head_->headers.add(name, value);
    has_host_ = true;
    return;
  }
  // RFC 9110 §7.6.1: `te: trailers` (the only TE nghttp2 lets through) and `trailer` are
  // hop-by-hop; the HTTP/1.1 upstream leg gets neither.
  if (isHopByHopHeader(name)) return;
  head_->headers.add(name, value);
}

RequestHeadBuilder::Result RequestHeadBuilder::finish() {
  Result result;
  if (bytes_ > max_bytes_) {
    result.error = CodecError{431, "request header list too large", CodecErrorKind::HeadTooLarge};
    return result;
  }
  if (fields_ > max_fields_) {
    result.error = CodecError{431, "too many request header fields", CodecErrorKind::TooManyFields};
    return result;
  }
  if (!knownMethod(head_->method)) {
    result.error = CodecError{501, "method not implemented", CodecErrorKind::UnknownMethod};
    return result;
  }
  // RFC 9113 §8.5: CONNECT tunnels are not something ferry forwards (as for HTTP/1.1).
  if (head_->method == "CONNECT") {
    result.error = CodecError{501, "CONNECT is not supported", CodecErrorKind::Malformed};
    return result;
  }
  // nghttp2 checks that :path is "/..." (or "*" for OPTIONS) only for the http and https
  // schemes; the HTTP/1.1 upstream leg needs origin-form whatever the scheme (RFC 9112 §3.2).
  const std::string& path = head_->path;
  if (path.empty() || (path.front() != '/' && !(path == "*" && head_->method == "OPTIONS"))) {
    result.error = CodecError{400, "invalid :path", CodecErrorKind::InvalidTarget};
    return result;
  }
  // nghttp2 checked the characters; §8.3.1 forbids userinfo, and HTTP/1.1 needs a Host.
  const std::string& authority = head_->authority;
  if (authority.empty() || authority.find('@') != std::string::npos) {
    result.error = CodecError{400, "invalid :authority", CodecErrorKind::InvalidHost};
    return result;
  }
  if (host_differs_) {
    result.error = CodecError{400, "host differs from :authority", CodecErrorKind::InvalidHost};
    return result;
  }
  if (!has_host_) head_->headers.add("host", authority);
  if (!cookie_.empty()) head_->headers.add("cookie", cookie_);
  head_->protocol = "HTTP/2";
  // Every name is a lowercase token and no value holds CR, LF or NUL (nghttp2 and the codec's
  // on_invalid_header refusal saw to that), and no hop-by-hop field is left: the HTTP/1.1
  // encoder towards the upstream need not check them again.
  head_->headers.markWireSafe();
  result.headers = std::move(head_);
  return result;
}

}  // namespace ferry::http::http2
