#include "proxy/server/server_stats.h"

#include "proxy/stats/accept_backoffs.h"

namespace ferry::server {

ServerStats::ServerStats(stats::Store& s)
    : downstream_connections_overflow(s.counter("ferry_downstream_connections_overflow_total",
                                                "Connections refused over max_connections")),
      downstream_connections_per_address_overflow(
          s.counter("ferry_downstream_connections_per_address_overflow_total",
                    "Connections refused over limits.max_connections_per_client_address")),
      accept_backoffs(stats::acceptBackoffsCounter(s, "data")),
      tls_reloads(s.counter("ferry_tls_reloads_total",
                            "TLS file sets (forwarding.tls, listener.tls) re-read on SIGHUP")),
      tls_reload_failures(
          s.counter("ferry_tls_reload_failures_total",
                    "TLS file set reloads that failed (the last good files stay)")) {}

}  // namespace ferry::server
