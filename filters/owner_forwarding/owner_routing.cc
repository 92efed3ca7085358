#include "filters/owner_forwarding/owner_routing.h"

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>

namespace ferry::filters {

std::string_view routeOutcomeName(RouteOutcome outcome) {
  switch (outcome) {
    case RouteOutcome::Right: return "right";
    case RouteOutcome::Corrected: return "wrong_then_corrected";
    case RouteOutcome::Unreachable: return "unreachable";
    case RouteOutcome::Failed: return "failed";
    case RouteOutcome::WrongOverLimit: return "wrong_over_limit";
  }
  return "unknown";
}

OwnerRouting::OwnerRouting(OwnerRoutingSettings settings, stats::Store& store)
    : settings_(settings),
      id_([] {
        static std::atomic<uint64_t> next{1};
        return next.fetch_add(1, std::memory_order_relaxed);
      }()),
      table_stats_(store) {
  for (int i = 0; i <= static_cast<int>(RouteOutcome::WrongOverLimit); ++i) {
    outcomes_[i] = &store.counter(
        "ferry_owner_routing_requests_total",
        "Requests sent straight to a learned owner, by what became of them",
        {{"outcome", std::string(routeOutcomeName(static_cast<RouteOutcome>(i)))}});
  }
}

OwnerRouteTable& OwnerRouting::table() const {
  // Per thread: a worker's streams only ever run on its thread (owner_route_table.h).
  thread_local std::unordered_map<uint64_t, std::unique_ptr<OwnerRouteTable>> tables;
  auto& slot = tables[id_];
  if (!slot) {
    slot = std::make_unique<OwnerRouteTable>(settings_.max_entries, settings_.ttl, table_stats_);
  }
  return *slot;
}

}  // namespace ferry::filters
