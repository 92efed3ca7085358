#pragma once
// The downstream side's metrics: the connection manager and its streams (http/), registered
// once at startup and shared by every worker. A metric lives with the module that counts it
// (docs/metrics.md, "Where a metric lives"): the workers' accept path and the TLS reloads are
// server/server_stats.h, the pools' upstream/upstream_stats.h, the router's
// filters/router/router_stats.h, a filter's its own <name>_stats.h.

#include <string_view>

#include "proxy/stats/stats.h"

namespace ferry::stats {

struct ProxyStats {
  explicit ProxyStats(Store& store);

  Counter& downstream_connections_total;
  Counter& downstream_http2_connections_total;  // of those, HTTP/2 (h2 by ALPN, or h2c)
  Gauge& downstream_connections_active;
  Counter& requests_total;
  Gauge& streams_active;
  // A connection's fair share (limits.max_active_requests_per_connection): requests that had to
  // wait for one of their connection's other requests to end, and those waiting now.
  Counter& requests_waited_for_connection_share;
  Gauge& requests_waiting_for_connection_share;
  Counter& downstream_bytes_received;
  Counter& downstream_bytes_sent;
  Counter& parse_errors;
  // Of parse_errors, the refusals with a series of their own (ferry_requests_refused_total).
  Counter& refused_too_many_headers;     // over limits.max_request_headers: 431
  Counter& refused_invalid_host;         // Host not uri-host [":" port]: 400
  Counter& refused_invalid_target;       // absolute-form not an http(s) URI with a host: 400
  Counter& refused_unknown_method;       // 501
  Counter& refused_body_framing;         // bad chunked framing after the head: 400
  Counter& refused_chunk_line_too_long;  // chunk-size line over 1 KiB: 400
  Counter& refused_http2_protocol;       // HTTP/2: malformed stream (RST_STREAM) or GOAWAY
  Counter& refused_http2_flood;          // HTTP/2: flood / rapid reset (GOAWAY ENHANCE_YOUR_CALM)
  Counter& request_head_timeouts;
  Counter& stream_idle_timeouts;
  Counter& request_body_timeouts;  // timeouts.request_body_idle: 408 or the stream cut
  Counter& response_timeouts;      // timeouts.response: whole response not done in time
  Counter& downstream_resets;      // client left mid-stream
  Counter& responses_cut;          // upstream failed after the response head was sent
  // ferry_watermark_pauses_total{paused=...}: named after the read that was paused.
  Counter& upstream_read_pauses;     // reading the upstream's response: the client reads slowly
  Counter& downstream_read_pauses;   // reading the client's request: the upstream takes it slowly
  Counter& next_request_pauses;      // the next pipelined request held: the client reads slowly
  Counter& replays;                  // requests sent again to another target
  Counter& replay_buffer_overflows;  // body passed the replay limit; no replay possible
  Gauge& replay_bytes_held;

  // Responses sent to clients, by status class (1xx..5xx).
  void countResponse(int status);
  // A request ended (answered, cut, the client left, or refused by the codec): its duration
  // goes to ferry_request_duration_seconds and it counts once in
  // ferry_requests_completed_total{method,class}. `method` empty: the codec refused the head
  // (method="none"); `status` 0: no response head went out (class="none").
  void countCompleted(std::string_view method, int status, uint64_t duration_micros);

 private:
  static constexpr int kMethods = 9;  // GET HEAD POST PUT DELETE PATCH OPTIONS other none
  static constexpr int kClasses = 6;  // 1xx..5xx, none
  Counter* responses_by_class_[5];
  Counter* completed_[kMethods][kClasses];
  Histogram& request_duration_;
};

}  // namespace ferry::stats
