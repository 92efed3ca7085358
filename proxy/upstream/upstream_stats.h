#pragma once
// The upstream pools' metrics (the HTTP/1.1 and HTTP/2 pools, their connections and client
// streams; the owner connections over HTTP/2): ferry_upstream_* and ferry_owner_connections_*,
// ferry_owner_h2_* in docs/metrics.md. Registered once at startup and shared by every worker's
// pools (relaxed atomics).

#include "proxy/stats/stats.h"

namespace ferry::upstream {

struct UpstreamStats {
  explicit UpstreamStats(stats::Store& store);

  stats::Counter& upstream_connects;
  stats::Counter& upstream_connect_failures;
  stats::Counter& upstream_connect_timeouts;
  stats::Counter& upstream_tls_handshakes;   // TLS upstream connections that completed a handshake
  stats::Counter& upstream_tls_resumptions;  // of those, handshakes that resumed a session
  stats::Counter& upstream_tls_handshake_failures;  // connected, then the TLS handshake failed
  stats::Counter& upstream_reuses;
  stats::Counter& upstream_resets;
  stats::Counter& upstream_retries;           // stale keep-alive connection retried once
  stats::Counter& upstream_overflow;          // pool queue full: 503
  stats::Counter& upstream_pending_failures;  // waiters failed at once by a failed connect
  // Malformed upstream responses, by reason (ferry_upstream_protocol_errors_total).
  stats::Counter& upstream_protocol_errors;      // any other malformed head
  stats::Counter& upstream_invalid_status;       // status code outside 100..599
  stats::Counter& upstream_body_framing_errors;  // bad chunked framing after the head
  stats::Counter& upstream_chunk_line_too_long;  // chunk-size line over 1 KiB
  // Connections to owners (the local instance's are not counted), and their HTTP/2 streams.
  stats::Gauge& owner_connections_active_h2;     // ferry_owner_connections_active{protocol="h2"}
  stats::Gauge& owner_connections_active_http1;  // ferry_owner_connections_active{protocol="http1"}
  stats::Gauge& owner_h2_streams_active;
  // Streams a closed owner h2 connection carried: a sum/count pair (the histograms here have
  // microsecond buckets), ferry_owner_h2_streams_per_connection_{sum,count}.
  stats::Counter& owner_h2_streams_per_connection_sum;
  stats::Counter& owner_h2_streams_per_connection_count;
  stats::Counter& owner_h2_refused_streams;  // REFUSED_STREAM, or above a GOAWAY's last-stream-id
  stats::Counter& owner_h2_goaways_received;
  stats::Counter& owner_h2_resets_before_send;  // ferry_owner_h2_resets_total{phase=...}
  stats::Counter& owner_h2_resets_after_send;
  stats::Counter& owner_h2_resets_after_head;
  stats::Counter& owner_h2_ping_timeouts;
  stats::Counter& owner_h2_write_blocked;  // a connection went above its write high watermark
};

}  // namespace ferry::upstream
