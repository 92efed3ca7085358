#pragma once
// Counters for every outcome of docs/forwarding.md ("What ferry counts"), on
// /stats. Per-owner series are created on first use and cached per worker (in the worker's
// context, event/worker_context.h), so the request path takes no lock after warm-up.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "proxy/event/worker_context.h"
#include "proxy/stats/stats.h"

namespace ferry::filters {

// Why a 409 with Streams-Replay-To went to the client unchanged.
enum class SkipReason {
  NotDataPlane,   // route not forwardable (health, operator, debug, internal, OPTIONS, ...)
  InvalidHeader,  // Streams-Replay-To is not a valid instance name
  Marked,         // the request arrived with Streams-Forwarded
  Self,           // the owner is this instance
  UnknownOwner,   // the peer table has no URL for the owner
  BodyOverLimit,  // more body was sent than the replay buffer keeps
  Refused,        // the owner could not be reached; it saw nothing
};
std::string_view skipReasonName(SkipReason reason);

struct OwnerStats {
  stats::Counter* attempted;
  stats::Counter* completed;
  stats::Counter* refused;
  stats::Counter* tls_handshake_failures;  // a subset of refused
  stats::Counter* failed_after_send;
  stats::Counter* cut;
  stats::Histogram* latency;
};

class OwnerForwardingStats {
 public:
  // Config time (main thread, before the workers are made): registers the families in `store`
  // and allocates the per-worker cache's slot in `slots`.
  OwnerForwardingStats(stats::Store& store, event::WorkerSlots& slots);
  void skipped(SkipReason reason);
  // `worker`'s thread: the owner's series, from that worker's cache (made on first use).
  OwnerStats& forOwner(event::WorkerContext& worker, const std::string& owner);
  // The client went away during a forward: before the owner's response head reached it, or
  // while the owner's answer streamed (the usual end of a forwarded live feed).
  stats::Counter& cancelled(bool during_response) {
    return during_response ? cancelled_during_response_ : cancelled_before_response_;
  }

 private:
  using OwnerCache = std::unordered_map<std::string, OwnerStats>;
  stats::Store& store_;
  const event::WorkerSlot<OwnerCache> cache_;
  stats::Counter* skipped_[7];
  stats::Counter& cancelled_before_response_;
  stats::Counter& cancelled_during_response_;
};

}  // namespace ferry::filters
