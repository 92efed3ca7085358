#include "filters/owner_forwarding/owner_routing.h"

#include <memory>
#include <string>

namespace ferry::filters {

std::string_view routeOutcomeName(RouteOutcome outcome) {
  switch (outcome) {
    case RouteOutcome::Right:
      return "right";
    case RouteOutcome::Corrected:
      return "wrong_then_corrected";
    case RouteOutcome::Unreachable:
      return "unreachable";
    case RouteOutcome::Failed:
      return "failed";
    case RouteOutcome::WrongOverLimit:
      return "wrong_over_limit";
  }
  return "unknown";
}

OwnerRouting::OwnerRouting(OwnerRoutingSettings settings, stats::Store& store,
                           event::WorkerSlots& slots)
    : settings_(settings),
      table_stats_(store),
      table_(slots.allocate<OwnerRouteTable>([this](event::WorkerContext&) {
        return std::make_unique<OwnerRouteTable>(settings_.max_entries, settings_.ttl,
                                                 table_stats_);
      })) {
  for (int i = 0; i <= static_cast<int>(RouteOutcome::WrongOverLimit); ++i) {
    outcomes_[i] =
        &store.counter("ferry_owner_routing_requests_total",
                       "Requests sent straight to a learned owner, by what became of them",
                       {{"outcome", std::string(routeOutcomeName(static_cast<RouteOutcome>(i)))}});
  }
}

}  // namespace ferry::filters
