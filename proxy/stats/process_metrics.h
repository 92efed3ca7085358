#pragma once
// The process metrics every Prometheus client library exports, under the same names, so
// dashboards made for other services work on ferry: process_cpu_seconds_total,
// process_resident_memory_bytes, process_open_fds, process_max_fds,
// process_start_time_seconds. Read from /proc and getrusage at scrape time (the admin thread),
// never on the request path.

#include <string>

namespace ferry::stats {

class ProcessMetrics {
 public:
  // Reads the process start time once (from /proc/self/stat and the boot time).
  ProcessMetrics();
  // Prometheus text for the families above.
  std::string render() const;

 private:
  double start_time_seconds_;
};

}  // namespace ferry::stats
