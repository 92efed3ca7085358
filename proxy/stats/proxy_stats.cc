#include "proxy/stats/proxy_stats.h"

namespace ferry::stats {

namespace {
Counter& refused(Store& s, const char* reason) {
  return s.counter("ferry_requests_refused_total",
                   "Malformed requests refused, by reason (also in ferry_parse_errors_total)",
                   {{"reason", reason}});
}
}  // namespace

ProxyStats::ProxyStats(Store& s)
    : downstream_connections_total(
          s.counter("ferry_downstream_connections_total", "Client connections accepted")),
      downstream_http2_connections_total(
          s.counter("ferry_downstream_http2_connections_total",
                    "Client connections that speak HTTP/2 (h2 by ALPN, or h2c)")),
      downstream_connections_active(
          s.gauge("ferry_downstream_connections_active", "Client connections open")),
      requests_total(s.counter("ferry_requests_total", "Requests received")),
      streams_active(s.gauge("ferry_streams_active", "Requests in flight")),
      requests_waited_for_connection_share(
          s.counter("ferry_connection_share_waits_total",
                    "Requests that waited because their connection already had "
                    "limits.max_active_requests_per_connection requests in flight")),
      requests_waiting_for_connection_share(s.gauge(
          "ferry_connection_share_waiting", "Requests waiting now for their connection's share")),
      downstream_bytes_received(
          s.counter("ferry_downstream_received_bytes_total", "Bytes read from clients")),
      downstream_bytes_sent(
          s.counter("ferry_downstream_sent_bytes_total", "Response body bytes sent to clients")),
      parse_errors(s.counter("ferry_parse_errors_total", "Malformed requests answered 4xx")),
      refused_too_many_headers(refused(s, "too_many_headers")),
      refused_invalid_host(refused(s, "invalid_host")),
      refused_invalid_target(refused(s, "invalid_target")),
      refused_unknown_method(refused(s, "unknown_method")),
      refused_body_framing(refused(s, "body_framing")),
      refused_chunk_line_too_long(refused(s, "chunk_line_too_long")),
      refused_http2_protocol(refused(s, "http2_protocol")),
      refused_http2_flood(refused(s, "http2_flood")),
      request_head_timeouts(
          s.counter("ferry_request_head_timeouts_total", "Request heads not completed in time")),
      stream_idle_timeouts(
          s.counter("ferry_stream_idle_timeouts_total", "Streams with no bytes either way")),
      request_body_timeouts(
          s.counter("ferry_request_body_timeouts_total",
                    "Request bodies that stalled past timeouts.request_body_idle (408 or cut)")),
      response_timeouts(s.counter("ferry_response_timeouts_total",
                                  "Responses not complete within timeouts.response")),
      downstream_resets(
          s.counter("ferry_downstream_resets_total", "Clients that left before the response end")),
      responses_cut(s.counter("ferry_responses_cut_total",
                              "Responses cut because the upstream failed mid-body")),
      upstream_read_pauses(s.counter("ferry_watermark_pauses_total",
                                     "Reads paused by a full buffer",
                                     {{"paused", "upstream_read"}})),
      downstream_read_pauses(s.counter("ferry_watermark_pauses_total",
                                       "Reads paused by a full buffer",
                                       {{"paused", "downstream_read"}})),
      next_request_pauses(s.counter("ferry_watermark_pauses_total", "Reads paused by a full buffer",
                                    {{"paused", "next_request"}})),
      replays(s.counter("ferry_replays_total", "Requests replayed to another upstream target")),
      replay_buffer_overflows(s.counter("ferry_replay_buffer_overflows_total",
                                        "Request bodies that outgrew the replay limit")),
      replay_bytes_held(
          s.gauge("ferry_replay_held_bytes", "Request body bytes kept for a possible replay")),
      request_duration_(s.histogram("ferry_request_duration_seconds",
                                    "Requests, from the complete request head (the first byte, "
                                    "for one the codec refused) to the response end, the cut, "
                                    "or the client leaving")) {
  for (int i = 0; i < 5; ++i) {
    responses_by_class_[i] = &s.counter("ferry_responses_total", "Responses by class",
                                        {{"class", std::to_string(i + 1) + "xx"}});
  }
  // Every series exists from the start, so the request path only indexes an array.
  static constexpr const char* kMethodNames[kMethods] = {
      "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "other", "none"};
  static constexpr const char* kClassNames[kClasses] = {"1xx", "2xx", "3xx", "4xx", "5xx", "none"};
  for (int m = 0; m < kMethods; ++m) {
    for (int c = 0; c < kClasses; ++c) {
      completed_[m][c] = &s.counter("ferry_requests_completed_total",
                                    "Requests ended, by method and response status class",
                                    {{"method", kMethodNames[m]}, {"class", kClassNames[c]}});
    }
  }
}

void ProxyStats::countCompleted(std::string_view method, int status, uint64_t duration_micros) {
  static constexpr std::string_view kKnown[] = {"GET",    "HEAD",  "POST",   "PUT",
                                                "DELETE", "PATCH", "OPTIONS"};
  int m = method.empty() ? kMethods - 1 : kMethods - 2;
  for (int i = 0; i < 7; ++i) {
    if (method == kKnown[i]) {
      m = i;
      break;
    }
  }
  int c = status == 0 ? kClasses - 1 : status / 100 - 1;
  if (c < 0 || c > 4) c = status == 0 ? kClasses - 1 : 4;
  completed_[m][c]->inc();
  request_duration_.observeMicros(duration_micros);
}

void ProxyStats::countResponse(int status) {
  int index = status / 100 - 1;
  if (index < 0 || index > 4) index = 4;  // nonsense statuses count as server errors
  responses_by_class_[index]->inc();
}

}  // namespace ferry::stats
