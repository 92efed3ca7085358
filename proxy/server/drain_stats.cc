#include "proxy/server/drain_stats.h"

namespace ferry::server {

DrainStats::DrainStats(stats::Store& s)
    : draining(s.gauge("ferry_draining",
                       "1 while ferry drains (/ready fails; the listener closes after "
                       "timeouts.drain_delay)")),
      requests_admin(s.counter("ferry_drain_requests_total", "Drain requests received",
                               {{"source", "admin"}})),
      requests_signal(s.counter("ferry_drain_requests_total", "Drain requests received",
                                {{"source", "signal"}})),
      live_feeds_ended(s.counter(
          "ferry_drain_live_feeds_ended_total",
          "Live feeds (SSE, long-poll) still open at the drain deadline, ended with a complete "
          "response so clients resume without an error",
          {{"end", "last_chunk"}})),
      long_polls_answered(s.counter(
          "ferry_drain_live_feeds_ended_total",
          "Live feeds (SSE, long-poll) still open at the drain deadline, ended with a complete "
          "response so clients resume without an error",
          {{"end", "retry_503"}})),
      streams_cut(s.counter("ferry_drain_streams_cut_total",
                            "Requests still in flight at the drain deadline that could not end "
                            "cleanly (no response head yet, or a Content-Length body): cut")) {}

}  // namespace ferry::server
