#include "filters/owner_forwarding/stream_key.h"

namespace ferry::filters {
namespace {

constexpr std::string_view kRawPrefix = "/v1/stream/";
constexpr std::string_view kProductPrefix = "/v1/streams/";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 §2.1, once; a malformed escape stays as it is (the instance does the same).
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

bool isProductSegment(std::string_view seg) {
  seg = seg.substr(0, seg.find(':'));
  return seg == "records" || seg == "consumers" || seg == "producers" || seg == "watches" ||
         seg == "forks";
}

std::string_view productName(std::string_view rest) {
  std::string_view name = rest;
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t slash = rest.find('/', start);
    const std::string_view seg = rest.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (start > 0 && isProductSegment(seg)) {
      name = rest.substr(0, start - 1);
      break;
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  const size_t last_slash = name.rfind('/');
  const size_t colon = name.find(':', last_slash == std::string_view::npos ? 0 : last_slash);
  if (colon != std::string_view::npos) name = name.substr(0, colon);
  return name;
}

}  // namespace

std::optional<std::string> streamKey(std::string_view path) {
  path = path.substr(0, path.find_first_of("?#"));
  std::string_view name;
  if (path.substr(0, kRawPrefix.size()) == kRawPrefix) {
    name = path.substr(kRawPrefix.size());
  } else if (path.substr(0, kProductPrefix.size()) == kProductPrefix) {
    name = productName(path.substr(kProductPrefix.size()));
  } else {
    return std::nullopt;
  }
  if (name.empty()) return std::nullopt;
  return percentDecode(name);
}

}  // namespace ferry::filters
