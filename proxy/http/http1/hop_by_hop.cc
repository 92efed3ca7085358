#include "proxy/http/http1/hop_by_hop.h"

#include <algorithm>

#include "proxy/http/http1/field_syntax.h"

namespace ferry::http::http1 {

namespace {

// True when the comma-separated `list` has an element equal to `name` (RFC 9110 §5.6.1: empty
// elements and OWS around them are allowed).
bool listContains(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view element = trimOws(list.substr(0, comma));
    if (!element.empty() && equalsIgnoreCase(element, name)) return true;
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return false;
}

// True when every element of the comma-separated `list` is empty or a name in the fixed
// hop-by-hop list (the usual "keep-alive"): Connection then names no field that the fixed list
// does not already remove.
bool namesOnlyFixedHopByHop(std::string_view list) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view element = trimOws(list.substr(0, comma));
    if (!element.empty() && !isHopByHopHeader(element)) return false;
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return true;
}

}  // namespace

std::string connectionOptions(const HeaderMap& headers) {
  std::string options;
  for (const auto& field : headers.fields()) {
    if (!equalsIgnoreCase(field.name, "connection")) continue;
    if (!options.empty()) options.push_back(',');
    options.append(field.value);
  }
  return options;
}

bool isHopByHop(std::string_view name, std::string_view connection_options) {
  if (isHopByHopHeader(name)) return true;
  if (connection_options.empty()) return false;
  // Content-Length is never treated as hop-by-hop: removing it would change how the next hop
  // frames a body this hop already framed by it.
  if (equalsIgnoreCase(name, "content-length")) return false;
  return listContains(connection_options, name);
}

void removeHopByHopFields(HeaderMap& headers) {
  // Most heads carry no hop-by-hop field at all, and a field can only be named by Connection
  // when a Connection field (itself hop-by-hop) is present: then there is nothing to do.
  const auto& fields = headers.fields();
  if (std::none_of(fields.begin(), fields.end(),
                   [](const HeaderField& f) { return isHopByHopHeader(f.name); })) {
    return;
  }
  // The usual case, "Connection: keep-alive": the fixed list alone decides, with no option
  // list to build and search for every field.
  if (std::all_of(fields.begin(), fields.end(), [](const HeaderField& f) {
        return !equalsIgnoreCase(f.name, "connection") || namesOnlyFixedHopByHop(f.value);
      })) {
    headers.removeIf([](const HeaderField& f) { return isHopByHopHeader(f.name); });
    return;
  }
  // A copy, not views: the Connection fields it comes from are removed along the way.
  const std::string options = connectionOptions(headers);
  headers.removeIf([&](const HeaderField& f) { return isHopByHop(f.name, options); });
}

}  // namespace ferry::http::http1
