#pragma once
// Duration values in the config: "500ms", "10s", "2m", "1h", or a bare integer = milliseconds.
// Used by the YAML reader; kept separate so it can be tested on its own.

#include <optional>
#include <string>
#include <string_view>

#include "config/ferry_config.h"

namespace ferry::config {

// Largest duration any config key accepts.
inline constexpr Millis kMaxDuration{24 * 60 * 60 * 1000};

// The duration `text` denotes, or nullopt when it is not one (empty, negative, fractional,
// unknown unit, spaces, or past 10^12 ms). Callers check the bounds of their key.
std::optional<Millis> parseDuration(std::string_view text);

// "1500ms", "10s", "2m", "1h": the largest unit that divides the value exactly.
std::string formatDuration(Millis value);

}  // namespace ferry::config
