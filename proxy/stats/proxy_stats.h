#pragma once
// The data plane's own metrics, registered once at startup and shared by every worker.

#include "proxy/stats/stats.h"

namespace ferry::stats {

struct ProxyStats {
  explicit ProxyStats(Store& store);

  Counter& downstream_connections_total;
  Gauge& downstream_connections_active;
  Counter& downstream_connections_overflow;  // over limits.max_connections: 503 and close
  Counter& accept_backoffs;  // accept() failed (out of descriptors): listener paused briefly
  Counter& requests_total;
  Gauge& streams_active;
  Counter& downstream_bytes_received;
  Counter& downstream_bytes_sent;
  Counter& parse_errors;
  Counter& request_head_timeouts;
  Counter& stream_idle_timeouts;
  Counter& downstream_resets;            // client left mid-stream
  Counter& responses_cut;                // upstream failed after the response head was sent
  Counter& upstream_connects;
  Counter& upstream_connect_failures;
  Counter& upstream_connect_timeouts;
  Counter& upstream_tls_handshakes;          // TLS upstream connections that completed a handshake
  Counter& upstream_tls_resumptions;        // of those, handshakes that resumed a session
  Counter& upstream_tls_handshake_failures;
  Counter& tls_reloads;          // SIGHUP: forwarding.tls files re-read and swapped in
  Counter& tls_reload_failures;  // SIGHUP: a TLS file failed to load; the last good one stays  // connected, then the TLS handshake failed
  Counter& upstream_reuses;
  Counter& upstream_resets;
  Counter& upstream_retries;             // stale keep-alive connection retried once
  Counter& upstream_overflow;            // pool queue full: 503
  Counter& upstream_unknown_outcome;     // 502: the upstream may have applied the request
  Counter& watermark_pauses_downstream;  // upstream reading paused: client reads slowly
  Counter& watermark_pauses_upstream;    // client reading paused: upstream accepts slowly
  Counter& watermark_pauses_next_request;  // next pipelined request held: client reads slowly
  Counter& replays;                      // requests sent again to another target
  Counter& replay_buffer_overflows;      // body passed the replay limit; no replay possible
  Gauge& replay_bytes_held;

  // Responses sent to clients, by status class (1xx..5xx).
  void countResponse(int status);

 private:
  Counter* responses_by_class_[5];
};

}  // namespace ferry::stats
