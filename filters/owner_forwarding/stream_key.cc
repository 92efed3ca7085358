#include "filters/owner_forwarding/stream_key.h"

#include "proxy/common/percent_decode.h"

namespace ferry::filters {
namespace {

bool isProductSegment(std::string_view seg) {
  seg = seg.substr(0, seg.find(':'));
  return seg == "records" || seg == "consumers" || seg == "producers" || seg == "watches" ||
         seg == "forks";
}

}  // namespace

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
