#pragma once
// Owner routing (project issue 15, docs/forwarding.md "Owner routing"): what the
// owner-forwarding filter needs to send a request straight to the instance that last proved it
// owns the request's stream. Shared, immutable; one per process. Each worker has its own table
// (table(worker), in the worker's context; see owner_route_table.h for why); the counters are
// shared atomics.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "filters/owner_forwarding/owner_route_table.h"
#include "proxy/event/worker_context.h"
#include "proxy/stats/stats.h"

namespace ferry::filters {

struct OwnerRoutingSettings {
  size_t max_entries = 100'000;           // per worker
  std::chrono::milliseconds ttl{30'000};  // after the last evidence
};

// What became of a routed request (ferry_owner_routing_requests_total{outcome}).
enum class RouteOutcome {
  Right,           // the learned owner answered (anything but a 409 naming another owner)
  Corrected,       // it answered 409 naming another: the entry was dropped, sent once more
  Unreachable,     // it could not be reached and saw nothing: entry dropped, local path taken
  Failed,          // it failed after a request byte was sent: 503 forward_failed (or a cut)
  WrongOverLimit,  // it was wrong, and the body outgrew the replay limit: its 409 went out
};
std::string_view routeOutcomeName(RouteOutcome outcome);

class OwnerRouting {
 public:
  // Config time (main thread, before the workers are made): registers the counters in `store`
  // and allocates the per-worker table's slot in `slots`.
  OwnerRouting(OwnerRoutingSettings settings, stats::Store& store, event::WorkerSlots& slots);
  // `worker`'s thread: that worker's table, made on first use; lives as long as the worker.
  OwnerRouteTable& table(event::WorkerContext& worker) const { return worker.get(table_); }
  void count(RouteOutcome outcome) const { outcomes_[static_cast<int>(outcome)]->inc(); }
  const OwnerRoutingSettings& settings() const { return settings_; }

 private:
  const OwnerRoutingSettings settings_;
  // Every worker's table counts here (relaxed atomics); declared before table_, which uses it.
  OwnerRouteTableStats table_stats_;
  const event::WorkerSlot<OwnerRouteTable> table_;
  stats::Counter* outcomes_[5];
};

}  // namespace ferry::filters
