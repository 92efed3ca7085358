#include "filters/live_feeds/resume_target.h"

#include <optional>
#include <utility>

#include "filters/live_feeds/query_parameters.h"

namespace ferry::filters {
namespace {

// RFC 3986 §2.3: unreserved characters stay; everything else is %XX.
void appendEncoded(std::string& out, std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : value) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
}

}  // namespace

std::string resumeTarget(std::string_view target, const FeedPosition& position) {
  std::string offset;
  appendEncoded(offset, position.next_offset);
  std::optional<std::string> cursor;
  if (!position.cursor.empty()) appendEncoded(cursor.emplace(), position.cursor);
  return withQueryParameters(target,
                             {{"offset", std::move(offset)}, {"cursor", std::move(cursor)}});
}

}  // namespace ferry::filters
