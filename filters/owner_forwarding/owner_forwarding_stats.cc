#include "filters/owner_forwarding/owner_forwarding_stats.h"

#include <atomic>
#include <unordered_map>

namespace ferry::filters {

std::string_view skipReasonName(SkipReason reason) {
  switch (reason) {
    case SkipReason::NotDataPlane: return "not_data_plane";
    case SkipReason::InvalidHeader: return "invalid_header";
    case SkipReason::Marked: return "marked";
    case SkipReason::Self: return "self";
    case SkipReason::UnknownOwner: return "unknown_owner";
    case SkipReason::BodyOverLimit: return "body_over_limit";
    case SkipReason::Refused: return "refused";
  }
  return "unknown";
}

OwnerForwardingStats::OwnerForwardingStats(stats::Store& store)
    : store_(store),
      id_([] {
        static std::atomic<uint64_t> next{1};
        return next.fetch_add(1, std::memory_order_relaxed);
      }()),
      cancelled_before_response_(store.counter(
          "ferry_forward_cancelled_total", "Forwards cancelled because the client went away",
          {{"phase", "before_response"}})),
      cancelled_during_response_(store.counter(
          "ferry_forward_cancelled_total", "Forwards cancelled because the client went away",
          {{"phase", "during_response"}})) {
  for (int i = 0; i <= static_cast<int>(SkipReason::Refused); ++i) {
    auto reason = static_cast<SkipReason>(i);
    skipped_[i] = &store.counter("ferry_forward_skipped_total",
                                 "409s passed to the client unchanged, by the condition that failed",
                                 {{"reason", std::string(skipReasonName(reason))}});
  }
}

void OwnerForwardingStats::skipped(SkipReason reason) { skipped_[static_cast<int>(reason)]->inc(); }

OwnerStats& OwnerForwardingStats::forOwner(const std::string& owner) {
  // Keyed by this stats object too: tests may run several servers in one process, one after
  // another at the same address (hence the id, not `this`).
  thread_local std::unordered_map<uint64_t, std::unordered_map<std::string, OwnerStats>> cache;
  auto& mine = cache[id_];
  auto it = mine.find(owner);
  if (it != mine.end()) return it->second;
  stats::Labels labels{{"owner", owner}};
  OwnerStats s{
      &store_.counter("ferry_forward_attempts_total", "Requests forwarded to their owner", labels),
      &store_.counter("ferry_forward_completed_total", "Forwards whose answer reached the client",
                      labels),
      &store_.counter("ferry_forward_refused_total",
                      "Forwards the owner refused before any byte was sent (409 kept)", labels),
      &store_.counter("ferry_forward_tls_handshake_failures_total",
                      "Forwards refused because the TLS handshake with the owner failed "
                      "(counted in refused too)",
                      labels),
      &store_.counter("ferry_forward_failed_total",
                      "Forwards that failed after sending: 503 forward_failed", labels),
      &store_.counter("ferry_forward_cut_total", "Forwarded responses cut mid-body", labels),
      &store_.histogram("ferry_forward_latency_seconds",
                        "From the forward's start to the owner's response end", labels)};
  return mine.emplace(owner, s).first->second;
}

}  // namespace ferry::filters
