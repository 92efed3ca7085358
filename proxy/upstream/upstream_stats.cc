#include "proxy/upstream/upstream_stats.h"

namespace ferry::upstream {

using stats::Counter;
using stats::Gauge;
using stats::Store;

namespace {
Counter& ownerH2Reset(Store& s, const char* phase) {
  return s.counter("ferry_owner_h2_resets_total",
                   "Owner HTTP/2 streams reset or lost, by phase: before_send (no request byte "
                   "sent), after_send (before the response head), after_head",
                   {{"phase", phase}});
}
Gauge& ownerConnections(Store& s, const char* protocol) {
  return s.gauge("ferry_owner_connections_active",
                 "Connections open to owners, by protocol (the local instance's not counted)",
                 {{"protocol", protocol}});
}
Counter& upstreamProtocolError(Store& s, const char* reason) {
  return s.counter("ferry_upstream_protocol_errors_total",
                   "Malformed upstream responses, by reason", {{"reason", reason}});
}
}  // namespace

UpstreamStats::UpstreamStats(Store& s)
    : upstream_connects(s.counter("ferry_upstream_connects_total", "Upstream connections made")),
      upstream_connect_failures(
          s.counter("ferry_upstream_connect_failures_total", "Upstream connects refused/failed")),
      upstream_connect_timeouts(
          s.counter("ferry_upstream_connect_timeouts_total", "Upstream connects timed out")),
      upstream_tls_handshakes(
          s.counter("ferry_upstream_tls_handshakes_total", "Upstream TLS handshakes completed")),
      upstream_tls_resumptions(s.counter("ferry_upstream_tls_resumptions_total",
                                         "Upstream TLS handshakes that resumed a session")),
      upstream_tls_handshake_failures(s.counter("ferry_upstream_tls_handshake_failures_total",
                                                "Upstream TLS handshakes that failed")),
      upstream_reuses(
          s.counter("ferry_upstream_reuses_total", "Requests sent on a reused connection")),
      upstream_resets(
          s.counter("ferry_upstream_resets_total", "Upstream connections lost mid-request")),
      upstream_retries(s.counter("ferry_upstream_retries_total",
                                 "Requests retried once after a stale keep-alive connection")),
      upstream_overflow(
          s.counter("ferry_upstream_overflow_total", "Requests refused: upstream queue full")),
      upstream_pending_failures(s.counter(
          "ferry_upstream_pending_failures_total",
          "Requests waiting for an upstream connection, failed at once by a failed connect")),
      upstream_protocol_errors(upstreamProtocolError(s, "malformed")),
      upstream_invalid_status(upstreamProtocolError(s, "invalid_status")),
      upstream_body_framing_errors(upstreamProtocolError(s, "body_framing")),
      upstream_chunk_line_too_long(upstreamProtocolError(s, "chunk_line_too_long")),
      owner_connections_active_h2(ownerConnections(s, "h2")),
      owner_connections_active_http1(ownerConnections(s, "http1")),
      owner_h2_streams_active(
          s.gauge("ferry_owner_h2_streams_active", "HTTP/2 streams open to owners")),
      owner_h2_streams_per_connection_sum(
          s.counter("ferry_owner_h2_streams_per_connection_sum",
                    "Streams carried by owner HTTP/2 connections that closed (sum)")),
      owner_h2_streams_per_connection_count(
          s.counter("ferry_owner_h2_streams_per_connection_count",
                    "Owner HTTP/2 connections that closed (count of the sum)")),
      owner_h2_refused_streams(s.counter(
          "ferry_owner_h2_refused_streams_total",
          "Owner HTTP/2 streams refused unprocessed (REFUSED_STREAM, or above GOAWAY's last id)")),
      owner_h2_goaways_received(
          s.counter("ferry_owner_h2_goaways_received_total", "GOAWAY frames received from owners")),
      owner_h2_resets_before_send(ownerH2Reset(s, "before_send")),
      owner_h2_resets_after_send(ownerH2Reset(s, "after_send")),
      owner_h2_resets_after_head(ownerH2Reset(s, "after_head")),
      owner_h2_ping_timeouts(s.counter("ferry_owner_h2_ping_timeouts_total",
                                       "Owner HTTP/2 connections closed: no PING ack in time")),
      owner_h2_write_blocked(
          s.counter("ferry_owner_h2_write_blocked_total",
                    "Times an owner HTTP/2 connection's writes rose above the write high "
                    "watermark (it takes no new stream until below the low one)")) {}

}  // namespace ferry::upstream
