#include "filters/live_feeds/long_poll_target.h"

#include <algorithm>
#include <optional>

#include "filters/live_feeds/query_parameters.h"

namespace ferry::filters {
namespace {

constexpr std::string_view kTimeout = "timeout";

}  // namespace

std::chrono::milliseconds longPollWait(std::string_view target) {
  std::optional<std::string> value;
  forEachQueryParameter(target, [&value](const std::string& name, std::string_view param) {
    if (!value && name == kTimeout) value = queryParameterValue(param);
  });
  if (!value || value->empty()) return kDefaultLongPollWait;
  // Whole milliseconds: seconds, then at most three digits of fraction (more are ignored).
  uint64_t millis = 0;
  size_t i = 0;
  for (; i < value->size() && (*value)[i] != '.'; ++i) {
    const char c = (*value)[i];
    if (c < '0' || c > '9') return kDefaultLongPollWait;
    millis = std::min<uint64_t>(millis * 10 + static_cast<uint64_t>(c - '0'), 1'000'000);
  }
  millis *= 1000;
  if (i < value->size()) {  // the fraction
    uint64_t scale = 100;
    for (++i; i < value->size(); ++i) {
      const char c = (*value)[i];
      if (c < '0' || c > '9') return kDefaultLongPollWait;
      millis += static_cast<uint64_t>(c - '0') * scale;
      scale /= 10;
    }
  }
  return std::min(std::chrono::milliseconds(millis), kMaxLongPollWait);
}

std::string withLongPollTimeout(std::string_view target, uint64_t seconds) {
  return withQueryParameters(target, {{kTimeout, std::to_string(seconds)}});
}

}  // namespace ferry::filters
