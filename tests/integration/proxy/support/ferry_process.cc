#include "tests/integration/proxy/support/ferry_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>

#include "tests/integration/proxy/support/http_message.h"
#include "tests/support/stats/stats_lookup.h"

#ifndef FERRY_BIN
#error "FERRY_BIN must name the ferry binary"
#endif

namespace ferry::itest {

namespace {

std::chrono::milliseconds remaining(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? std::chrono::milliseconds(0) : left;
}

StatusOr<std::unique_ptr<testing::Process>> startFerry(
    const std::vector<std::string>& args, const std::vector<std::string>& wrapper = {}) {
  testing::ProcessOptions options;
  options.argv = wrapper;
  options.argv.push_back(FERRY_BIN);
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.name = "ferry";
  options.stop_grace = std::chrono::milliseconds(2000);
  return testing::Process::start(std::move(options));
}

}  // namespace

std::string renderConfig(const FerryConfigParams& p) {
  std::ostringstream y;
  y << "instance_name: inst-1\n"
    << "listener: {address: 127.0.0.1, port: " << p.listener_port
    << (p.reuse_port ? ", reuse_port: true" : "") << "}\n"
    << "local_instance: {address: 127.0.0.1, port: " << p.upstream_port << p.local_instance_extra
    << "}\n"
    << "admin: {address: 127.0.0.1, port: 0}\n"
    << "workers: " << p.workers << "\n"
    << "limits: {replay_buffer_bytes: " << p.replay_buffer_bytes
    << ", buffer_high_watermark_bytes: " << p.high_watermark
    << ", max_connections: " << p.max_connections
    << ", max_request_header_bytes: " << p.max_request_header_bytes;
  if (p.max_request_headers != 0) y << ", max_request_headers: " << p.max_request_headers;
  y << p.limits_extra << "}\n"
    << "timeouts: {request_head: " << p.request_head << ", keepalive_idle: " << p.keepalive_idle
    << ", stream_idle: " << p.stream_idle << ", upstream_connect: " << p.upstream_connect
    << ", upstream_idle: " << p.upstream_idle << ", response_head: " << p.response_head
    << ", drain: " << p.drain;
  if (!p.drain_delay.empty()) y << ", drain_delay: " << p.drain_delay;
  y << p.timeouts_extra << "}\n"
    << "upstream: {max_connections: " << p.upstream_max_connections << "}\n"
    << "forwarding: " << p.forwarding_yaml << "\n";
  if (!p.access_log.empty() && p.access_log_format.empty()) {
    y << "access_log: \"" << p.access_log << "\"\n";
  } else if (!p.access_log.empty()) {
    y << "access_log: {path: \"" << p.access_log << "\", format: " << p.access_log_format << "}\n";
  }
  y << p.extra_yaml;
  return y.str();
}

namespace {

// Every file writeTempFile made, unlinked when the test binary exits (ctest runs one test per
// process), so a test run leaves nothing in /tmp. FERRY_KEEP_TEST_DIRS=1 keeps them.
class TempFiles {
 public:
  void add(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    paths_.push_back(path);
  }
  ~TempFiles() {
    const char* keep = getenv("FERRY_KEEP_TEST_DIRS");
    if (keep != nullptr && std::string_view(keep) == "1") return;
    for (const auto& path : paths_) ::unlink(path.c_str());
  }

 private:
  std::mutex mu_;
  std::vector<std::string> paths_;
};

TempFiles& tempFiles() {
  static TempFiles files;
  return files;
}

}  // namespace

std::string writeTempFile(const std::string& text, const std::string& suffix) {
  std::string path = "/tmp/ferry-itest-XXXXXX" + suffix;
  int fd = ::mkstemps(path.data(), static_cast<int>(suffix.size()));
  if (fd < 0) return "";
  tempFiles().add(path);
  ::write(fd, text.data(), text.size());
  ::close(fd);
  return path;
}

std::unique_ptr<FerryProcess> FerryProcess::start(const std::string& yaml, std::string* error,
                                                  const std::vector<std::string>& wrapper) {
  auto ferry = std::unique_ptr<FerryProcess>(new FerryProcess());
  ferry->config_path_ = writeTempFile(yaml);
  auto process = startFerry({"--config", ferry->config_path_}, wrapper);
  if (!process.isOk()) {
    *error = process.status().message();
    return nullptr;
  }
  ferry->process_ = std::move(*process);
  auto ready = ferry->process_->waitForLine(
      R"(ferry ready listener=127\.0\.0\.1:(\d+) admin=127\.0\.0\.1:(\d+))",
      std::chrono::seconds(10));
  if (!ready.isOk()) {
    *error = "no ready line from ferry: " + ready.status().message() +
             "; stderr: " + ferry->process_->stderrText();
    return nullptr;  // the destructor stops it
  }
  ferry->port_ = static_cast<uint16_t>(std::stoi(ready->at(1)));
  ferry->admin_port_ = static_cast<uint16_t>(std::stoi(ready->at(2)));
  return ferry;
}

FerryProcess::~FerryProcess() {
  process_.reset();  // stops ferry if the test did not
  if (!config_path_.empty()) ::unlink(config_path_.c_str());
}

pid_t FerryProcess::pid() const { return process_->pid(); }

std::optional<std::string> FerryProcess::adminGet(const std::string& path, int* status) {
  Socket s = Socket::connectTo(admin_port_);
  if (!s.valid()) return std::nullopt;
  if (!s.sendAll("GET " + path + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n")) {
    return std::nullopt;
  }
  auto response = readResponse(s, defaultDeadline());
  if (!response) return std::nullopt;
  if (status != nullptr) *status = response->status;
  return response->body;
}

std::optional<HttpMessage> FerryProcess::adminRequest(const std::string& method,
                                                      const std::string& path) {
  Socket s = Socket::connectTo(admin_port_);
  if (!s.valid()) return std::nullopt;
  const std::string length = method == "POST" ? "Content-Length: 0\r\n" : "";
  if (!s.sendAll(method + " " + path + " HTTP/1.1\r\nHost: admin\r\n" + length +
                 "Connection: close\r\n\r\n")) {
    return std::nullopt;
  }
  return readResponse(s, defaultDeadline(), method == "HEAD");
}

int64_t FerryProcess::stat(const std::string& series) {
  int status = 0;
  auto body = adminGet("/stats", &status);
  if (!body || status != 200) {
    ADD_FAILURE() << "GET /stats failed reading " << series;
    return testing::kNoSuchSeries;
  }
  return testing::expectSeries(*body, series);
}

bool FerryProcess::waitForStat(const std::string& series, int64_t at_least, Deadline deadline) {
  for (;;) {
    int status = 0;
    auto body = adminGet("/stats", &status);
    if (body && status == 200) {
      auto v = testing::seriesValue(*body, series);
      if (!v.isOk()) {
        ADD_FAILURE() << v.status().message();  // a misspelt name: no point waiting
        return false;
      }
      if (*v >= at_least) return true;
    }
    if (Clock::now() >= deadline) return false;
    // Polling interval of a condition wait, not a synchronisation sleep.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

namespace {
// utime + stime of `pid` in clock ticks; nullopt when the stat line is not what proc(5) says.
std::optional<long long> cpuTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t comm_end = stat.rfind(')');
  if (!in || comm_end == std::string::npos || comm_end + 2 > stat.size()) return std::nullopt;
  std::istringstream rest(stat.substr(comm_end + 2));
  std::string field;
  std::vector<std::string> fields;
  while (rest >> field) fields.push_back(field);
  // After "pid (comm) ": state is field 3, so utime (14) and stime (15) are at 11 and 12.
  if (fields.size() < 13) return std::nullopt;
  char* end = nullptr;
  const long long utime = std::strtoll(fields[11].c_str(), &end, 10);
  if (*end != '\0' || utime < 0) return std::nullopt;
  const long long stime = std::strtoll(fields[12].c_str(), &end, 10);
  if (*end != '\0' || stime < 0) return std::nullopt;
  return utime + stime;
}
}  // namespace

double FerryProcess::cpuSeconds() const {
  const std::optional<long long> ticks = cpuTicks(pid());
  if (!ticks) {
    ADD_FAILURE() << "no CPU reading for ferry (pid " << pid() << ")";
    return kNoCpuReading;
  }
  return static_cast<double>(*ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

long FerryProcess::peakRssKiB() const {
  std::ifstream in("/proc/" + std::to_string(pid()) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    char* end = nullptr;
    const long kib = std::strtol(line.c_str() + 6, &end, 10);
    if (end != line.c_str() + 6 && kib > 0) return kib;
    break;
  }
  ADD_FAILURE() << "no VmHWM for ferry (pid " << pid() << ")";
  return kNoRssReading;
}

void FerryProcess::signal(int sig) { process_->signal(sig); }

std::string FerryProcess::stderrText() const { return process_->stderrText(); }

std::optional<int> FerryProcess::waitExit(Deadline deadline) {
  return process_->waitExit(remaining(deadline));
}

CommandResult runFerry(const std::vector<std::string>& args, Deadline deadline) {
  CommandResult result;
  auto process = startFerry(args);
  if (!process.isOk()) {
    result.out = process.status().message();
    return result;
  }
  std::optional<int> code = (*process)->waitExit(remaining(deadline));
  result.exit_code = code ? *code : (*process)->stop();
  result.out = (*process)->stdoutText() + (*process)->stderrText();
  return result;
}

}  // namespace ferry::itest
