#include "config/duration.h"

#include <cstdint>
#include <string>

namespace ferry::config {
namespace {

constexpr size_t kMaxDigits = 12;  // 10^12 ms is ~31 years: no overflow even times 3,600,000

}  // namespace

std::optional<Millis> parseDuration(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  if (digits == 0 || digits > kMaxDigits) {
    return std::nullopt;
  }
  int64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    value = value * 10 + (text[i] - '0');
  }
  const std::string_view unit = text.substr(digits);
  int64_t scale = 0;
  if (unit.empty() || unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60 * 1000;
  } else if (unit == "h") {
    scale = 60 * 60 * 1000;
  } else {
    return std::nullopt;
  }
  const int64_t ms = value * scale;
  if (ms > 1'000'000'000'000) {
    return std::nullopt;
  }
  return Millis(ms);
}

std::string formatDuration(Millis value) {
  const int64_t ms = value.count();
  if (ms != 0 && ms % (60 * 60 * 1000) == 0) {
    return std::to_string(ms / (60 * 60 * 1000)) + "h";
  }
  if (ms != 0 && ms % (60 * 1000) == 0) {
    return std::to_string(ms / (60 * 1000)) + "m";
  }
  if (ms != 0 && ms % 1000 == 0) {
    return std::to_string(ms / 1000) + "s";
  }
  return std::to_string(ms) + "ms";
}

}  // namespace ferry::config
