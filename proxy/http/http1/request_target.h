#pragma once
// Request-target and Host checks for the server codec (RFC 9112 §3.2, RFC 9110 §7.2 and
// RFC 3986 §3.2): a request is forwarded upstream in origin-form with a Host that is a
// well-formed authority, whatever form the client used.

#include <string>
#include <string_view>

namespace ferry::http::http1 {

// Host = uri-host [ ":" port ] (RFC 9110 §7.2): an IP-literal in brackets, an IPv4 address or
// a reg-name, then an optional all-digit port. An empty value is allowed (RFC 9112 §3.2: a
// target without an authority). No userinfo, no path, no whitespace.
bool isValidHost(std::string_view host);

struct RequestTarget {
  enum class Form { Origin, Absolute, Asterisk, Invalid };
  Form form = Form::Invalid;
  // Absolute-form only: the URI's authority (validated) and the target in origin-form.
  std::string_view authority;
  std::string origin_form;
};

// Classifies `target` as llhttp accepted it. Absolute-form is accepted for the http and
// https schemes with a non-empty authority and no userinfo; authority-form (CONNECT, refused
// before this) and any other shape is Invalid.
RequestTarget parseRequestTarget(std::string_view target);

}  // namespace ferry::http::http1
