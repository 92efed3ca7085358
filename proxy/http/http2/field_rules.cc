#include "proxy/http/http2/field_rules.h"

namespace ferry::http::http2 {

std::string_view trimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool namedByConnection(std::string_view name, const HeaderMap& headers) {
  for (const auto& field : headers.fields()) {
    if (!equalsIgnoreCase(field.name, "connection")) continue;
    std::string_view rest = field.value;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      if (equalsIgnoreCase(trimSpaces(rest.substr(0, comma)), name)) return true;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return false;
}

bool writable(const HeaderField& field) {
  if (field.name.empty() || field.name.front() == ':') return false;
  for (char c : field.value) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

}  // namespace ferry::http::http2
