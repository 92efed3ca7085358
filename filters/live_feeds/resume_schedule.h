#pragma once
// When the next attempt of a broken live feed goes out, and when to stop trying
// (docs/live-feeds.md, "Resume"): an answer that says when to come back (`503` with
// `Retry-After`, e.g. `shard_moving` while a shard moves) is waited for that long; any other
// failure backs off, 100 ms doubling to 2 s; nothing is tried past the deadline, counted from
// the moment the feed broke, and a feed that runs again starts afresh.
//
// Owned by the live-feeds filter of one client stream; it asks nextDelay() after each failed
// attempt and arms its own timer. Pure arithmetic on the times it is given (no clock of its
// own), so tests need no waiting.

#include <chrono>
#include <optional>
#include <string_view>

namespace ferry::filters {

class ResumeSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  using Millis = std::chrono::milliseconds;
  static constexpr Millis kFirstBackoff{100};
  static constexpr Millis kMaxBackoff{2'000};

  explicit ResumeSchedule(Millis deadline) : deadline_(deadline) {}

  // The feed broke at `now` (its upstream ended without the stream's own end): the deadline
  // starts, unless it already runs (a failed resume attempt is not a new break).
  void onBroken(Clock::time_point now);
  // An attempt answered with a running feed: the next break starts a new deadline and backoff.
  void onRunning();
  bool broken() const { return broken_since_.has_value(); }

  // How long to wait before the next attempt after one that failed at `now`; `retry_after` is
  // the answer's Retry-After value (delta-seconds; an HTTP-date or garbage counts as absent).
  // nullopt: the deadline has passed (or would before the wait ends): give up.
  std::optional<Millis> nextDelay(Clock::time_point now, std::string_view retry_after = {});

  // Retry-After as delta-seconds (RFC 9110 §10.2.3); nullopt for anything else.
  static std::optional<Millis> parseRetryAfter(std::string_view value);

 private:
  Millis deadline_;
  std::optional<Clock::time_point> broken_since_;
  Millis backoff_ = kFirstBackoff;
};

}  // namespace ferry::filters
