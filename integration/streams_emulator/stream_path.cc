#include "integration/streams_emulator/stream_path.h"

#include <array>
#include <cctype>

namespace ferry::streams {
namespace {

constexpr std::array<std::string_view, 5> kSubResources = {"records", "consumers", "producers",
                                                           "watches", "forks"};

bool isSubResource(std::string_view segment) {
  const std::string_view bare = segment.substr(0, segment.find(':'));
  for (std::string_view s : kSubResources) {
    if (bare == s) return true;
  }
  return false;
}

}  // namespace

ProductTarget readProductTarget(std::string_view after_prefix) {
  ProductTarget t;
  t.name = after_prefix;
  // The first segment is always part of the name; a sub-resource starts at a later one.
  for (size_t slash = after_prefix.find('/'); slash != std::string_view::npos;
       slash = after_prefix.find('/', slash + 1)) {
    const std::string_view from_here = after_prefix.substr(slash + 1);
    if (isSubResource(from_here.substr(0, from_here.find('/')))) {
      t.name = after_prefix.substr(0, slash);
      t.rest = from_here;
      break;
    }
  }
  const size_t last_segment = t.name.rfind('/') == std::string_view::npos ? 0 : t.name.rfind('/');
  if (const size_t colon = t.name.find(':', last_segment); colon != std::string_view::npos) {
    t.name = t.name.substr(0, colon);
    t.verb = true;
  }
  return t;
}

std::string decodePercentOnce(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    if (in[i] == '%' && i + 2 < in.size() && std::isxdigit(static_cast<unsigned char>(in[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(in[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16));
      i += 3;
    } else {
      out += in[i++];
    }
  }
  return out;
}

}  // namespace ferry::streams
