#pragma once
// Field syntax checks shared by the HTTP/1 parser (rejecting what llhttp 8 lets through in its
// default, non-strict build) and the encoders (never writing a field that could split a
// message). RFC 9110 §5.1 (names are tokens) and §5.5 (values exclude CR, LF and NUL).

#include <string_view>

namespace ferry::http::http1 {

// token = 1*tchar (RFC 9110 §5.6.2).
bool isToken(std::string_view s);
// True when `value` holds no CR, LF or NUL, so it cannot end the field line early.
bool isSafeFieldValue(std::string_view value);
// Drops leading and trailing SP / HTAB (OWS, RFC 9110 §5.6.3). Inline: it runs for every
// parsed field value.
inline std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace ferry::http::http1
