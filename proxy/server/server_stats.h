#pragma once
// The server's own series in /stats: what the workers' accept path refused or backed off from
// (worker.cc) and the SIGHUP reloads of TLS file sets (tls_reload.h). Not the connection
// manager's or its streams' (stats::ProxyStats) and not the listener TLS handshakes'
// (ListenerTls registers those). docs/metrics.md, "Where a metric lives".
//
// Registered once by the Server (app/server.cc), which owns it; the workers (WorkerShared) and
// ListenerTls hold a reference. Counters only: any thread.

#include "proxy/stats/stats.h"

namespace ferry::server {

struct ServerStats {
  explicit ServerStats(stats::Store& store);

  stats::Counter& downstream_connections_overflow;  // over limits.max_connections: 503, close
  // Over limits.max_connections_per_client_address: 503 and close.
  stats::Counter& downstream_connections_per_address_overflow;
  // ferry_accept_backoffs_total{listener="data"}: the data listener's accept() failed for want
  // of descriptors and it paused briefly (the admin listener's is admin::AdminStats').
  stats::Counter& accept_backoffs;
  // SIGHUP: a TLS file set (forwarding.tls, listener.tls) swapped in, or one that failed to
  // load (the last good one stays).
  stats::Counter& tls_reloads;
  stats::Counter& tls_reload_failures;
};

}  // namespace ferry::server
