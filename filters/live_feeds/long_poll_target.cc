#include "filters/live_feeds/long_poll_target.h"

#include <algorithm>
#include <optional>

#include "proxy/common/percent_decode.h"

namespace ferry::filters {
namespace {

constexpr std::string_view kTimeout = "timeout";

// Calls `visit(param)` for each `&`-separated parameter of the query (without the `?`).
template <class Visit>
void forEachParameter(std::string_view query, Visit visit) {
  size_t start = 0;
  while (start <= query.size() && !query.empty()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    visit(query.substr(start, end - start));
    start = end + 1;
  }
}

bool isTimeout(std::string_view param) {
  return percentDecode(param.substr(0, param.find('='))) == kTimeout;
}

}  // namespace

std::chrono::milliseconds longPollWait(std::string_view target) {
  const size_t question = target.find('?');
  if (question == std::string_view::npos) return kDefaultLongPollWait;
  std::optional<std::string> value;
  forEachParameter(target.substr(question + 1), [&value](std::string_view param) {
    if (value || !isTimeout(param)) return;
    const size_t equals = param.find('=');
    value = percentDecode(equals == std::string_view::npos ? std::string_view()
                                                           : param.substr(equals + 1));
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
  const size_t question = target.find('?');
  std::string out(target.substr(0, question));
  const std::string setting = std::string(kTimeout) + "=" + std::to_string(seconds);
  char separator = '?';
  bool done = false;
  auto emit = [&](std::string_view text) {
    out.push_back(separator);
    out.append(text);
    separator = '&';
  };
  if (question != std::string_view::npos) {
    forEachParameter(target.substr(question + 1), [&](std::string_view param) {
      if (!isTimeout(param)) {
        if (!param.empty()) emit(param);
      } else if (!done) {
        emit(setting);
        done = true;
      }
    });
  }
  if (!done) emit(setting);
  return out;
}

}  // namespace ferry::filters
