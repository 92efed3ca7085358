#include "tests/integration/forwarding/support/h2_owner.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <regex>
#include <sstream>
#include <thread>

#ifndef H2_OWNER_SCRIPT
#define H2_OWNER_SCRIPT "h2_owner.py"
#endif

namespace ferry::fwdtest {

namespace {
constexpr const char* kPython = "/usr/bin/python3";  // Debian's, where python3-h2 lives
}  // namespace

StatusOr<std::unique_ptr<ScriptedH2Owner>> ScriptedH2Owner::start(const std::string& log_dir,
                                                                  const H2OwnerOptions& options) {
  std::unique_ptr<ScriptedH2Owner> owner(new ScriptedH2Owner());
  testing::ProcessOptions p;
  p.argv = {kPython, H2_OWNER_SCRIPT};
  if (!options.cert_file.empty()) {
    p.argv.insert(p.argv.end(), {"--tls", options.cert_file, options.key_file});
  }
  if (options.max_concurrent_streams > 0) {
    p.argv.insert(p.argv.end(), {"--max-streams", std::to_string(options.max_concurrent_streams)});
  }
  if (options.initial_window > 0) {
    p.argv.insert(p.argv.end(), {"--window", std::to_string(options.initial_window)});
  }
  if (options.rcvbuf > 0) {
    p.argv.insert(p.argv.end(), {"--rcvbuf", std::to_string(options.rcvbuf)});
  }
  if (options.close_listener_on_drop) p.argv.push_back("--close-listener-on-drop");
  if (options.close_listener_on_clog) p.argv.push_back("--close-listener-on-clog");
  static int n = 0;
  p.name = "h2-owner-" + std::to_string(n++);
  p.log_dir = log_dir;
  p.stop_grace = std::chrono::milliseconds(2000);
  auto proc = testing::Process::start(std::move(p));
  if (!proc.isOk()) return proc.status();
  owner->process_ = std::move(*proc);
  auto line = owner->process_->waitForLine(R"(^listening 127\.0\.0\.1:(\d+))",
                                           std::chrono::milliseconds(10000));
  if (!line.isOk()) {
    return unavailable("h2_owner.py: " + line.status().message() +
                       "; stderr: " + owner->process_->stderrText());
  }
  owner->port_ = static_cast<uint16_t>(std::stoi(line->at(1)));
  return owner;
}

void ScriptedH2Owner::sync() {
  const std::string marker = "\nsync " + std::to_string(++syncs_) + "\n";
  process_->signal(SIGUSR1);
  // The log file, not waitForLine(): that would consume the lines a later waitFor() wants.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (process_->stdoutText().find(marker) != std::string::npos) return;
    std::this_thread::yield();
  }
  ADD_FAILURE() << "h2_owner.py did not answer sync " << syncs_ << "; it printed:\n" << log();
}

void ScriptedH2Owner::dropClogged() { process_->signal(SIGUSR2); }

int ScriptedH2Owner::count(const std::string& pattern) {
  sync();
  const std::regex re(pattern);
  std::istringstream in(process_->stdoutText());
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, re)) ++n;
  }
  return n;
}

StatusOr<std::vector<std::string>> ScriptedH2Owner::waitFor(const std::string& pattern,
                                                            std::chrono::milliseconds timeout) {
  auto r = process_->waitForLine(pattern, timeout);
  if (!r.isOk()) return unavailable(r.status().message() + "; owner saw:\n" + log());
  return r;
}

}  // namespace ferry::fwdtest
