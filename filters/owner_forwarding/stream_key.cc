#include "filters/owner_forwarding/stream_key.h"

namespace ferry::filters {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool isProductSegment(std::string_view seg) {
  seg = seg.substr(0, seg.find(':'));
  return seg == "records" || seg == "consumers" || seg == "producers" || seg == "watches" ||
         seg == "forks";
}

}  // namespace

std::string percentDecode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 2 < in.size()) {
      const int hi = hexValue(in[i + 1]);
      const int lo = hexValue(in[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += in[i];
  }
  return out;
}

ProductPath splitProductPath(std::string_view rest) {
  ProductPath p;
  p.name = rest;
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t slash = rest.find('/', start);
    const std::string_view seg = rest.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (start > 0 && isProductSegment(seg)) {
      p.name = rest.substr(0, start - 1);
      p.sub = rest.substr(start);
      break;
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  // A trailing ":verb" on the name itself is removed (e.g. /v1/streams/orders:seal).
  const size_t last_slash = p.name.rfind('/');
  const size_t colon = p.name.find(':', last_slash == std::string_view::npos ? 0 : last_slash);
  if (colon != std::string_view::npos) {
    p.name = p.name.substr(0, colon);
    p.had_verb = true;
  }
  return p;
}

std::optional<std::string> streamKey(std::string_view path) {
  path = path.substr(0, path.find_first_of("?#"));
  std::string_view name;
  if (path.substr(0, kRawStreamPrefix.size()) == kRawStreamPrefix) {
    name = path.substr(kRawStreamPrefix.size());
  } else if (path.substr(0, kProductStreamPrefix.size()) == kProductStreamPrefix) {
    name = splitProductPath(path.substr(kProductStreamPrefix.size())).name;
  } else {
    return std::nullopt;
  }
  if (name.empty()) return std::nullopt;
  return percentDecode(name);
}

}  // namespace ferry::filters
