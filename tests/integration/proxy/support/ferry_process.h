#pragma once
// Runs the real ferry binary for a test: writes its config to a temp file, starts it, waits for
// its "ferry ready" line, reads its admin /stats, signals it, and always stops it (SIGKILL in
// the destructor if the test did not see it exit).

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "integration/harness/process.h"
#include "tests/integration/proxy/support/http_message.h"
#include "tests/integration/proxy/support/socket.h"

namespace ferry::itest {

// The knobs the tests turn; everything else is the config the brief's tests share.
struct FerryConfigParams {
  uint16_t upstream_port = 1;
  uint32_t max_connections = 100;
  uint32_t max_request_header_bytes = 61440;
  uint32_t max_request_headers = 0;  // 0: not in the config (ferry's default)
  uint32_t replay_buffer_bytes = 65536;
  uint32_t high_watermark = 1024 * 1024;
  std::string drain = "30s";
  std::string drain_delay;           // empty: not in the config (ferry's default, 0)
  std::string local_instance_extra;  // e.g. ", readiness: {interval: 100ms}" (YAML flow items)
  std::string limits_extra;          // e.g. ", max_active_requests_per_connection: 8"
  std::string timeouts_extra;        // e.g. ", request_body_idle: 1s"
  std::string upstream_idle = "4s";
  std::string request_head = "10s";
  std::string upstream_connect = "2s";
  std::string keepalive_idle = "60s";
  std::string stream_idle = "300s";
  std::string response_head = "15s";
  uint32_t upstream_max_connections = 256;  // per worker, per upstream target
  int workers = 1;
  std::string access_log;         // empty: none
  std::string access_log_format;  // empty: the first form (`access_log: PATH`)
  std::string extra_yaml;         // appended to the config as it is (top-level keys)
  std::string forwarding_yaml = "{enabled: false}";  // the value of `forwarding`
  uint16_t listener_port = 0;                        // 0: the kernel picks
  bool reuse_port = false;                           // listener.reuse_port
};
std::string renderConfig(const FerryConfigParams& params);

class FerryProcess {
 public:
  // Starts `binary --config <file with yaml>`; nullptr (and a message in *error) on failure.
  // `wrapper`, when given, runs first and execs ferry (e.g. {"/usr/bin/prlimit", "--nofile=64"}).
  static std::unique_ptr<FerryProcess> start(const std::string& yaml, std::string* error,
                                             const std::vector<std::string>& wrapper = {});
  ~FerryProcess();

  uint16_t port() const { return port_; }
  uint16_t adminPort() const { return admin_port_; }
  pid_t pid() const;

  // GET path on the admin listener; the body, or nullopt when it failed.
  std::optional<std::string> adminGet(const std::string& path, int* status = nullptr);
  // `method` path (no body) on the admin listener; the whole response, nullopt on failure.
  std::optional<HttpMessage> adminRequest(const std::string& method, const std::string& path);
  // A counter or gauge from /stats: `series` is the exact series text before the value,
  // e.g. `ferry_upstream_reuses_total` or `ferry_watermark_pauses_total{paused="upstream_read"}`.
  // 0 when ferry exports the family but not the series. A family ferry does not export (a
  // misspelt name) or a failed /stats fails the test (tests/support/stats/stats_lookup.h).
  int64_t stat(const std::string& series);
  // Polls /stats until stat(series) >= at_least; false at the deadline (or at once, failing
  // the test, for a family ferry does not export).
  bool waitForStat(const std::string& series, int64_t at_least,
                   Deadline deadline = defaultDeadline());
  // Readings from /proc/PID of ferry. One that fails (ferry gone, /proc unreadable or not as
  // proc(5) says) fails the test and reads as more than any bound a test sets, so no CPU or
  // memory assertion can pass on it.
  static constexpr double kNoCpuReading = 1e9;
  static constexpr long kNoRssReading = 1L << 40;
  // User plus system CPU seconds ferry has used so far (stat fields 14 and 15).
  double cpuSeconds() const;
  // Peak resident set (VmHWM) in KiB.
  long peakRssKiB() const;
  void signal(int sig);
  // What ferry wrote to stderr so far.
  std::string stderrText() const;
  // Waits for exit; the exit code (or 128+signal), nullopt on timeout.
  std::optional<int> waitExit(Deadline deadline = defaultDeadline());

 private:
  FerryProcess() = default;
  std::unique_ptr<testing::Process> process_;
  uint16_t port_ = 0;
  uint16_t admin_port_ = 0;
  std::string config_path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr, merged
};
// Runs ferry with `args` to completion (killed after the deadline).
CommandResult runFerry(const std::vector<std::string>& args, Deadline deadline = defaultDeadline());

// Writes `text` to a fresh temp file; returns its path. Removed when the test binary exits.
std::string writeTempFile(const std::string& text, const std::string& suffix = ".yaml");

}  // namespace ferry::itest
