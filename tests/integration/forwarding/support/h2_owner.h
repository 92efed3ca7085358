#pragma once
// The scripted HTTP/2 owner (h2_owner.py, run by Debian's /usr/bin/python3 with python3-h2) as
// a test sees it: a process listening on 127.0.0.1 (h2c, or TLS with ALPN h2 when given a
// certificate), scripted per stream by the stream name's prefix (see the script's docstring:
// ok, refuse, goawaybelow, resetbody, resethead, goawayfeed, feed, dropfeed, stall, big,
// silent, clog, trailers), printing one line per event it saw or did. Tests count those lines and
// wait on them.
//
//   auto owner = ScriptedH2Owner::start(cell_->workDir());
//   ... forward "ok-3" to it ...
//   EXPECT_EQ((*owner)->connections(), 1);
//   (*owner)->waitFor(R"(^sent conn=\d+ stream=\d+ what=goaway)");
//
// Stopped by its destructor (Process: SIGTERM, then SIGKILL).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "integration/harness/process.h"
#include "proxy/common/status.h"

namespace ferry::fwdtest {

struct H2OwnerOptions {
  std::string cert_file;  // both set: TLS with ALPN h2; else h2c (prior knowledge)
  std::string key_file;
  uint32_t max_concurrent_streams = 0;  // 0: not advertised (no limit)
  uint32_t initial_window = 0;          // 0: the protocol's 65,535
  uint32_t rcvbuf = 0;                  // SO_RCVBUF of its connections (0: the system's)
  bool close_listener_on_drop = false;  // dropClogged() closes the listener first
  bool close_listener_on_clog = false;  // a "clog" stream closes the listener (owner gone)
};

class ScriptedH2Owner {
 public:
  static StatusOr<std::unique_ptr<ScriptedH2Owner>> start(const std::string& log_dir,
                                                          const H2OwnerOptions& options = {});
  uint16_t port() const { return port_; }

  // Stdout lines matching the ECMAScript regex `pattern` (std::regex_search), of everything the
  // owner printed before this call: it syncs first (SIGUSR1, then its "sync N" line in the log
  // file), so a line printed just before is never missed because the pipe lags.
  int count(const std::string& pattern);
  int connections() { return count(R"(^conn \d+ open$)"); }
  int streams() { return count(R"(^headers )"); }
  // Waits for a line matching `pattern` that an earlier waitFor() did not consume.
  StatusOr<std::vector<std::string>> waitFor(
      const std::string& pattern,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));
  // Drops every connection a "clog" stream stopped reading (SIGUSR2; the owner prints
  // "dropped conn=C" for each), with close_listener_on_drop after closing its listener.
  void dropClogged();
  // Everything it printed (for failure messages).
  std::string log() const { return process_->stdoutText() + process_->stderrText(); }

 private:
  ScriptedH2Owner() = default;
  // Waits until the log file holds everything the owner printed so far (see count()).
  void sync();

  std::unique_ptr<testing::Process> process_;
  uint16_t port_ = 0;
  int syncs_ = 0;
};

}  // namespace ferry::fwdtest
