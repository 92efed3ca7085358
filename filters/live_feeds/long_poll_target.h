#pragma once
// A long-poll's wait and its resent target (docs/live-feeds.md, "Long-polls"). A Streams
// long-poll waits up to its `timeout` query parameter, in seconds (3 s when absent, 25 s at
// most: docs/streams-instance.md). ferry sends a long-poll again within the client's own wait,
// so it reads that wait, and a resend asks the instance to wait only for what is left of it.
// Pure functions; used by LongPollRead.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace ferry::filters {

inline constexpr std::chrono::milliseconds kDefaultLongPollWait{3'000};
inline constexpr std::chrono::milliseconds kMaxLongPollWait{25'000};

// The wait `target` (origin form) asks for: its first `timeout` parameter read as a decimal
// number of seconds (digits, an optional fraction), at most kMaxLongPollWait; the default when
// the parameter is absent or not such a number (as the instance reads it).
std::chrono::milliseconds longPollWait(std::string_view target);

// `target` with `timeout=<seconds>`: the first `timeout` parameter replaced at its place and its
// repeats dropped, or appended when there is none; every other parameter kept, in order.
// Parameter names are compared after percent-decoding.
std::string withLongPollTimeout(std::string_view target, uint64_t seconds);

}  // namespace ferry::filters
