#include "filters/router/router_stats.h"

namespace ferry::filters {

RouterStats::RouterStats(stats::Store& s)
    : upstream_response_head_timeouts(s.counter(
          "ferry_upstream_response_head_timeouts_total",
          "Requests sent whole whose upstream sent no response head within response_head")),
      upstream_unknown_outcome(s.counter("ferry_upstream_unknown_outcome_total",
                                         "502 answers: the upstream may have applied it")) {}

}  // namespace ferry::filters
