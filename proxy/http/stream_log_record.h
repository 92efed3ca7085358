#pragma once
// What one stream's access log record is made of, gathered while the stream runs (who answered
// and when, body bytes both ways, the status, what filters wrote into the stream info), and the
// stream's end: the request counted in ferry_requests_completed_total and the duration
// histogram, and the record written when `access_log` is configured (access_log/access_log.h).
// Owned by the ActiveStream, which calls it at each event; written once, at the stream's end.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/access_log/access_log.h"
#include "proxy/access_log/stream_info.h"
#include "proxy/http/header_map.h"
#include "proxy/stats/proxy_stats.h"

namespace ferry::http {

class StreamLogRecord {
 public:
  // The current upstream attempt goes to `upstream` ("local", or an owner's name).
  void attemptTo(std::string upstream) { attempt_to_ = std::move(upstream); }
  // The current attempt's response head arrived: that upstream answers, this long after start.
  void upstreamAnswered();
  // Ferry answers itself (a local reply): no upstream answered.
  void answeredLocally() {
    answered_by_.clear();
    upstream_ttfb_ = std::chrono::microseconds(-1);
  }
  void setStatus(int status) { status_ = status; }
  void addRequestBytes(uint64_t bytes) { request_bytes_ += bytes; }
  void addResponseBytes(uint64_t bytes) { response_bytes_ += bytes; }
  // What filters write for the record (StreamFilterCallbacks::streamInfo()).
  access_log::StreamInfo& info() { return info_; }

  // The stream ended (`end`: "ok", "cut", "client_left"): counts it in `stats` and writes the
  // record to `log` (null: none configured).
  void write(const RequestHeaders& request, std::string_view end, std::string_view client,
             std::string_view peer, stats::ProxyStats& stats, access_log::AccessLog* log) const;
  // The record write() hands the access log, for a stream that lasted `duration`.
  access_log::Entry entry(const RequestHeaders& request, std::string_view end,
                          std::string_view client, std::string_view peer,
                          std::chrono::microseconds duration) const;

 private:
  std::chrono::system_clock::time_point started_at_ = std::chrono::system_clock::now();
  uint64_t request_bytes_ = 0;
  uint64_t response_bytes_ = 0;
  int status_ = 0;                    // 0: no response head went out
  std::string attempt_to_ = "local";  // the upstream the current attempt goes to
  std::string answered_by_;           // the upstream whose response head was taken; empty:
                                      // none (a local reply, or nothing came)
  std::chrono::microseconds upstream_ttfb_{-1};  // start -> that response head
  access_log::StreamInfo info_;
};

}  // namespace ferry::http
