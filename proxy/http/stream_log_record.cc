#include "proxy/http/stream_log_record.h"

#include <algorithm>

namespace ferry::http {

void StreamLogRecord::upstreamAnswered() {
  answered_by_ = attempt_to_;
  upstream_ttfb_ = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now() - started_at_);
}

void StreamLogRecord::write(const RequestHeaders& request, std::string_view end,
                            std::string_view client, std::string_view peer,
                            stats::ProxyStats& stats, access_log::AccessLog* log) const {
  const auto duration =
      std::max(std::chrono::microseconds(0), std::chrono::duration_cast<std::chrono::microseconds>(
                                                 std::chrono::system_clock::now() - started_at_));
  stats.countCompleted(request.method, status_, static_cast<uint64_t>(duration.count()));
  if (log != nullptr) log->write(entry(request, end, client, peer, duration));
}

access_log::Entry StreamLogRecord::entry(const RequestHeaders& request, std::string_view end,
                                         std::string_view client, std::string_view peer,
                                         std::chrono::microseconds duration) const {
  access_log::Entry entry;
  entry.start = started_at_;
  entry.duration = duration;
  entry.upstream_ttfb = upstream_ttfb_;
  entry.client = client;
  entry.method = request.method;
  entry.path = request.path;
  entry.protocol = request.protocol;
  entry.status = status_;
  entry.request_bytes = request_bytes_;
  entry.response_bytes = response_bytes_;
  entry.request_id = request.headers.get("x-request-id").value_or(std::string_view());
  entry.user_agent = request.headers.get("user-agent").value_or(std::string_view());
  entry.upstream = answered_by_;
  entry.info = &info_;
  entry.end = end;
  entry.peer = peer;
  return entry;
}

}  // namespace ferry::http
