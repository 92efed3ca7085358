#pragma once
// A child process for integration tests, benchmarks and the cell launcher.
//
//   auto p = Process::start({.argv = {"/path/streams-emulator", "--port", "0"}});
//   auto m = (*p)->waitForLine(R"(listening on 127\.0\.0\.1:(\d+))", 10s);  // m->at(1) = port
//
// stdout is read by a thread into <log dir>/<name>.stdout (and kept in memory as lines, so
// waitForLine() waits on a condition instead of polling); stderr goes to <name>.stderr.
// The destructor stops the child: SIGTERM, then SIGKILL after `stop_grace`. The child also
// gets SIGKILL if the thread that started it dies (PR_SET_PDEATHSIG), so a crashed test never
// leaves processes behind: start processes from a thread that outlives them (the main thread).

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "proxy/common/status.h"

namespace ferry::testing {

struct ProcessOptions {
  std::vector<std::string> argv;  // argv[0] is the executable path
  std::vector<std::string> env;   // extra "KEY=VALUE" entries, added to the parent's env
  std::string name;               // log file stem; default: basename of argv[0]
  std::string log_dir;            // default: a fresh directory under $TMPDIR or /tmp, removed
                                  // with the Process (see removeTempDir)
  std::chrono::milliseconds stop_grace{5000};
};

class Process {
 public:
  static StatusOr<std::unique_ptr<Process>> start(ProcessOptions options);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }

  // Waits until a stdout line (not consumed by an earlier waitForLine) matches the ECMAScript
  // regex `pattern` (std::regex_search); returns the match and its groups ([0] = whole match).
  // Lines up to the matching one are consumed. Fails on timeout or when stdout ends first.
  StatusOr<std::vector<std::string>> waitForLine(const std::string& pattern,
                                                 std::chrono::milliseconds timeout);

  // Waits for the child to exit (and for its stdout to be read to the end); returns its exit
  // code (128 + signal when killed), or nullopt on timeout. Safe to call again after it
  // returned a value.
  std::optional<int> waitExit(std::chrono::milliseconds timeout);
  bool running();

  // Sends `sig` (no-op once the child was reaped).
  void signal(int sig);
  // SIGTERM, wait up to `grace`, then SIGKILL; returns the exit code.
  int stop(std::chrono::milliseconds grace);
  int stop() { return stop(options_.stop_grace); }

  const std::string& stdoutPath() const { return stdout_path_; }
  const std::string& stderrPath() const { return stderr_path_; }
  std::string stdoutText() const;
  std::string stderrText() const;

 private:
  explicit Process(ProcessOptions options) : options_(std::move(options)) {}
  void readStdout(int fd);

  ProcessOptions options_;
  bool owns_log_dir_ = false;  // log_dir was made by start(): removed by the destructor
  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::optional<int> exit_code_;
  std::string stdout_path_;
  std::string stderr_path_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;  // complete stdout lines
  size_t next_line_ = 0;            // first line not consumed by waitForLine
  bool stdout_closed_ = false;
  std::thread reader_;
};

// A fresh private directory (mkdtemp) under $TMPDIR or /tmp; `stem` names it. Whoever made
// it removes it with removeTempDir() when done, so test runs leave nothing behind.
StatusOr<std::string> makeTempDir(const std::string& stem);
// Removes `path` and everything in it, unless the environment has FERRY_KEEP_TEST_DIRS=1 (to
// read the logs of a run afterwards). Errors are ignored: it is cleanup.
void removeTempDir(const std::string& path);

}  // namespace ferry::testing
