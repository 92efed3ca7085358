#include "filters/owner_forwarding/owner_forwarding_stats.h"

#include <utility>

namespace ferry::filters {

namespace {
// The per-owner families: series appear when an owner is first forwarded to; the families are
// declared at start so /stats lists them before that.
constexpr char kAttempts[] = "ferry_forward_attempts_total";
constexpr char kAttemptsHelp[] = "Requests forwarded to their owner";
constexpr char kCompleted[] = "ferry_forward_completed_total";
constexpr char kCompletedHelp[] = "Forwards whose answer reached the client";
constexpr char kRefused[] = "ferry_forward_refused_total";
constexpr char kRefusedHelp[] = "Forwards the owner refused before any byte was sent (409 kept)";
constexpr char kTls[] = "ferry_forward_tls_handshake_failures_total";
constexpr char kTlsHelp[] =
    "Forwards refused because the TLS handshake with the owner failed (counted in refused too)";
constexpr char kFailed[] = "ferry_forward_failed_total";
constexpr char kFailedHelp[] = "Forwards that failed after sending: 503 forward_failed";
constexpr char kCut[] = "ferry_forward_cut_total";
constexpr char kCutHelp[] = "Forwarded responses cut mid-body";
constexpr char kLatency[] = "ferry_forward_latency_seconds";
constexpr char kLatencyHelp[] = "From the forward's start to the owner's response end";
}  // namespace

std::string_view skipReasonName(SkipReason reason) {
  switch (reason) {
    case SkipReason::NotDataPlane:
      return "not_data_plane";
    case SkipReason::InvalidHeader:
      return "invalid_header";
    case SkipReason::Marked:
      return "marked";
    case SkipReason::Self:
      return "self";
    case SkipReason::UnknownOwner:
      return "unknown_owner";
    case SkipReason::BodyOverLimit:
      return "body_over_limit";
    case SkipReason::Refused:
      return "refused";
  }
  return "unknown";
}

OwnerForwardingStats::OwnerForwardingStats(stats::Store& store, event::WorkerSlots& slots)
    : store_(store),
      cache_(slots.allocate<OwnerCache>(
          [](event::WorkerContext&) { return std::make_unique<OwnerCache>(); })),
      cancelled_before_response_(store.counter("ferry_forward_cancelled_total",
                                               "Forwards cancelled because the client went away",
                                               {{"phase", "before_response"}})),
      cancelled_during_response_(store.counter("ferry_forward_cancelled_total",
                                               "Forwards cancelled because the client went away",
                                               {{"phase", "during_response"}})) {
  for (const auto& [name, help] : {std::pair{kAttempts, kAttemptsHelp},
                                   {kCompleted, kCompletedHelp},
                                   {kRefused, kRefusedHelp},
                                   {kTls, kTlsHelp},
                                   {kFailed, kFailedHelp},
                                   {kCut, kCutHelp}}) {
    store.declareCounter(name, help);
  }
  store.declareHistogram(kLatency, kLatencyHelp);
  for (int i = 0; i <= static_cast<int>(SkipReason::Refused); ++i) {
    auto reason = static_cast<SkipReason>(i);
    skipped_[i] =
        &store.counter("ferry_forward_skipped_total",
                       "409s passed to the client unchanged, by the condition that failed",
                       {{"reason", std::string(skipReasonName(reason))}});
  }
}

void OwnerForwardingStats::skipped(SkipReason reason) { skipped_[static_cast<int>(reason)]->inc(); }

OwnerStats& OwnerForwardingStats::forOwner(event::WorkerContext& worker, const std::string& owner) {
  OwnerCache& mine = worker.get(cache_);
  auto it = mine.find(owner);
  if (it != mine.end()) return it->second;
  stats::Labels labels{{"owner", owner}};
  OwnerStats s{&store_.counter(kAttempts, kAttemptsHelp, labels),
               &store_.counter(kCompleted, kCompletedHelp, labels),
               &store_.counter(kRefused, kRefusedHelp, labels),
               &store_.counter(kTls, kTlsHelp, labels),
               &store_.counter(kFailed, kFailedHelp, labels),
               &store_.counter(kCut, kCutHelp, labels),
               &store_.histogram(kLatency, kLatencyHelp, labels)};
  return mine.emplace(owner, s).first->second;
}

}  // namespace ferry::filters
