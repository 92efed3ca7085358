#include "proxy/http/http1/hop_by_hop.h"

#include <algorithm>
#include <cctype>

#include "proxy/http/http1/field_syntax.h"

namespace ferry::http::http1 {

std::vector<std::string> connectionTokens(const HeaderMap& headers) {
  std::vector<std::string> tokens;
  for (const auto& field : headers.fields()) {
    if (!equalsIgnoreCase(field.name, "connection")) continue;
    std::string_view rest = field.value;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view token = trimOws(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (token.empty()) continue;
      std::string lowered(token);
      std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      tokens.push_back(std::move(lowered));
    }
  }
  return tokens;
}

bool isHopByHop(std::string_view name, const std::vector<std::string>& connection_tokens) {
  if (isHopByHopHeader(name)) return true;
  // Content-Length is never treated as hop-by-hop: removing it would change how the next hop
  // frames a body this hop already framed by it.
  if (equalsIgnoreCase(name, "content-length")) return false;
  return std::any_of(connection_tokens.begin(), connection_tokens.end(),
                     [&](const std::string& t) { return equalsIgnoreCase(t, name); });
}

void removeHopByHopFields(HeaderMap& headers) {
  // Most heads carry no hop-by-hop field at all, and a field can only be named by Connection
  // when a Connection field (itself hop-by-hop) is present: then there is nothing to do.
  const auto& fields = headers.fields();
  if (std::none_of(fields.begin(), fields.end(),
                   [](const HeaderField& f) { return isHopByHopHeader(f.name); })) {
    return;
  }
  std::vector<std::string> tokens = connectionTokens(headers);
  std::vector<std::string> doomed;
  for (const auto& field : headers.fields()) {
    if (isHopByHop(field.name, tokens)) doomed.push_back(field.name);
  }
  for (const auto& name : doomed) headers.remove(name);
}

}  // namespace ferry::http::http1
