#include "proxy/admin/admin_stats.h"

#include "proxy/stats/accept_backoffs.h"

namespace ferry::admin {

AdminStats::AdminStats(stats::Store& s)
    : connections_active(s.gauge("ferry_admin_connections_active", "Admin connections open")),
      connections_overflow(s.counter("ferry_admin_connections_overflow_total",
                                     "Admin connections refused over admin.max_connections")),
      idle_evictions(s.counter("ferry_admin_idle_evictions_total",
                               "Idle admin connections closed to take a new one at "
                               "admin.max_connections")),
      request_head_timeouts(s.counter("ferry_admin_request_head_timeouts_total",
                                      "Admin request heads not completed in time")),
      idle_timeouts(
          s.counter("ferry_admin_idle_timeouts_total", "Idle admin keep-alive connections closed")),
      parse_errors(s.counter("ferry_admin_parse_errors_total",
                             "Admin requests refused as malformed, too large or not GET/HEAD")),
      accept_backoffs(stats::acceptBackoffsCounter(s, "admin")) {}

}  // namespace ferry::admin
