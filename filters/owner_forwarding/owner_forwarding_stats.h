#pragma once
// Counters for every outcome of docs/forwarding.md ("What ferry counts"), on
// /stats. Per-owner series are created on first use and cached per thread, so the request path
// takes no lock after warm-up.

#include <cstdint>
#include <string>
#include <string_view>

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
  explicit OwnerForwardingStats(stats::Store& store);
  void skipped(SkipReason reason);
  OwnerStats& forOwner(const std::string& owner);
  // The client went away during a forward: before the owner's response head reached it, or
  // while the owner's answer streamed (the usual end of a forwarded live feed).
  stats::Counter& cancelled(bool during_response) {
    return during_response ? cancelled_during_response_ : cancelled_before_response_;
  }

 private:
  stats::Store& store_;
  // Keys this object's entries in forOwner()'s per-thread cache. Never reused, unlike the
  // object's address: a new instance at a freed one's address must not see its counters.
  const uint64_t id_;
  stats::Counter* skipped_[7];
  stats::Counter& cancelled_before_response_;
  stats::Counter& cancelled_during_response_;
};

}  // namespace ferry::filters
