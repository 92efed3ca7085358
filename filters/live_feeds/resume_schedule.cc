#include "filters/live_feeds/resume_schedule.h"

#include <algorithm>
#include <cstdint>

namespace ferry::filters {

void ResumeSchedule::onBroken(Clock::time_point now) {
  if (!broken_since_) broken_since_ = now;
}

void ResumeSchedule::onRunning() {
  broken_since_.reset();
  backoff_ = kFirstBackoff;
}

std::optional<ResumeSchedule::Millis> ResumeSchedule::nextDelay(Clock::time_point now,
                                                                std::string_view retry_after) {
  onBroken(now);
  Millis delay;
  if (auto asked = parseRetryAfter(retry_after)) {
    delay = *asked;
  } else {
    delay = backoff_;
    backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  }
  const auto resume_at = now + delay;
  if (resume_at > *broken_since_ + deadline_) return std::nullopt;
  return delay;
}

std::optional<ResumeSchedule::Millis> ResumeSchedule::parseRetryAfter(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty() || value.size() > 9) return std::nullopt;  // > 11 days: not a delta we wait
  uint64_t seconds = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    seconds = seconds * 10 + static_cast<uint64_t>(c - '0');
  }
  return std::chrono::duration_cast<Millis>(std::chrono::seconds(seconds));
}

}  // namespace ferry::filters
