#include "tests/integration/proxy/support/ferry_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/integration/proxy/support/http_message.h"

#ifndef FERRY_BIN
#error "FERRY_BIN must name the ferry binary"
#endif

namespace ferry::itest {

namespace {
int remainingMs(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

pid_t spawn(const std::vector<std::string>& args, int& out_fd, bool merge_stderr) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    if (merge_stderr) ::dup2(pipe_fds[1], STDERR_FILENO);
    std::vector<char*> argv;
    std::string bin = FERRY_BIN;
    argv.push_back(bin.data());
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  out_fd = pipe_fds[0];
  return pid;
}

int decodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}
}  // namespace

std::string renderConfig(const FerryConfigParams& p) {
  std::ostringstream y;
  y << "instance_name: inst-1\n"
    << "listener: {address: 127.0.0.1, port: 0}\n"
    << "local_instance: {address: 127.0.0.1, port: " << p.upstream_port << "}\n"
    << "admin: {address: 127.0.0.1, port: 0}\n"
    << "workers: " << p.workers << "\n"
    << "limits: {replay_buffer_bytes: " << p.replay_buffer_bytes
    << ", buffer_high_watermark_bytes: " << p.high_watermark
    << ", max_connections: " << p.max_connections
    << ", max_request_header_bytes: " << p.max_request_header_bytes << "}\n"
    << "timeouts: {request_head: " << p.request_head << ", keepalive_idle: " << p.keepalive_idle
    << ", stream_idle: " << p.stream_idle << ", upstream_connect: 2s, upstream_idle: "
    << p.upstream_idle << ", drain: " << p.drain << "}\n"
    << "forwarding: {enabled: false}\n";
  if (!p.access_log.empty()) y << "access_log: \"" << p.access_log << "\"\n";
  return y.str();
}

std::string writeTempFile(const std::string& text, const std::string& suffix) {
  std::string path = "/tmp/ferry-itest-XXXXXX" + suffix;
  int fd = ::mkstemps(path.data(), static_cast<int>(suffix.size()));
  if (fd < 0) return "";
  ::write(fd, text.data(), text.size());
  ::close(fd);
  return path;
}

std::unique_ptr<FerryProcess> FerryProcess::start(const std::string& yaml, std::string* error) {
  auto process = std::unique_ptr<FerryProcess>(new FerryProcess());
  process->config_path_ = writeTempFile(yaml);
  int out_fd = -1;
  process->pid_ = spawn({"--config", process->config_path_}, out_fd, false);
  if (process->pid_ < 0) {
    *error = "fork failed";
    return nullptr;
  }
  // Read the one ready line.
  std::string line;
  Deadline deadline = deadlineIn(std::chrono::seconds(10));
  while (line.find('\n') == std::string::npos) {
    pollfd p{out_fd, POLLIN, 0};
    if (::poll(&p, 1, remainingMs(deadline)) <= 0) break;
    char buf[512];
    ssize_t n = ::read(out_fd, buf, sizeof(buf));
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  ::close(out_fd);
  unsigned listener = 0, admin = 0;
  if (std::sscanf(line.c_str(), "ferry ready listener=127.0.0.1:%u admin=127.0.0.1:%u", &listener,
                  &admin) != 2) {
    *error = "no ready line from ferry (got '" + line + "')";
    return nullptr;  // the destructor kills it
  }
  process->port_ = static_cast<uint16_t>(listener);
  process->admin_port_ = static_cast<uint16_t>(admin);
  return process;
}

FerryProcess::~FerryProcess() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  if (!config_path_.empty()) ::unlink(config_path_.c_str());
}

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

int64_t FerryProcess::stat(const std::string& series) {
  auto body = adminGet("/stats");
  if (!body) return -1;
  std::istringstream in(*body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::strtoll(line.c_str() + series.size() + 1, nullptr, 10);
    }
  }
  return -1;
}

bool FerryProcess::waitForStat(const std::string& series, int64_t at_least, Deadline deadline) {
  for (;;) {
    if (stat(series) >= at_least) return true;
    if (Clock::now() >= deadline) return false;
    // Polling interval of a condition wait, not a synchronisation sleep.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

long FerryProcess::peakRssKiB() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

void FerryProcess::signal(int sig) {
  if (pid_ > 0 && !exited_) ::kill(pid_, sig);
}

std::optional<int> FerryProcess::waitExit(Deadline deadline) {
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      return decodeStatus(status);
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

CommandResult runFerry(const std::vector<std::string>& args, Deadline deadline) {
  CommandResult result;
  int out_fd = -1;
  pid_t pid = spawn(args, out_fd, true);
  for (;;) {
    pollfd p{out_fd, POLLIN, 0};
    if (::poll(&p, 1, remainingMs(deadline)) <= 0) break;
    char buf[4096];
    ssize_t n = ::read(out_fd, buf, sizeof(buf));
    if (n <= 0) break;
    result.out.append(buf, static_cast<size_t>(n));
  }
  ::close(out_fd);
  int status = 0;
  if (Clock::now() >= deadline) ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  result.exit_code = decodeStatus(status);
  return result;
}

}  // namespace ferry::itest
