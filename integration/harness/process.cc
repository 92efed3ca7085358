#include "integration/harness/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string_view>

extern char** environ;

namespace ferry::testing {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

StatusOr<std::string> makeTempDir(const std::string& stem) {
  const char* tmp = getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + stem + "-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    return internalError(std::string("mkdtemp: ") + strerror(errno));
  }
  return templ;
}

void removeTempDir(const std::string& path) {
  const char* keep = getenv("FERRY_KEEP_TEST_DIRS");
  if (path.empty() || (keep != nullptr && std::string_view(keep) == "1")) return;
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

StatusOr<std::unique_ptr<Process>> Process::start(ProcessOptions options) {
  if (options.argv.empty()) return invalidArgument("argv is empty");
  if (options.name.empty()) {
    const std::string& a0 = options.argv[0];
    options.name = a0.substr(a0.rfind('/') + 1);
  }
  const bool make_log_dir = options.log_dir.empty();
  if (make_log_dir) {
    auto dir = makeTempDir("ferry-" + options.name);
    if (!dir.isOk()) return dir.status();
    options.log_dir = *dir;
  }
  std::unique_ptr<Process> p(new Process(std::move(options)));
  p->owns_log_dir_ = make_log_dir;
  const ProcessOptions& o = p->options_;
  p->stdout_path_ = o.log_dir + "/" + o.name + ".stdout";
  p->stderr_path_ = o.log_dir + "/" + o.name + ".stderr";

  // Everything the child needs is prepared before fork(): after it, only async-signal-safe
  // calls are allowed (the parent may have other threads).
  std::vector<char*> argv;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  for (const auto& e : o.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return internalError("pipe2 failed");
  const int err_fd = open(p->stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (err_fd < 0 || null_fd < 0) return internalError("cannot open " + p->stderr_path_);
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) return internalError(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    // The exec'd program starts with a clean signal state whatever the parent blocked or
    // ignored (e.g. ferry-cell blocks SIGTERM to sigwait() for it; tests ignore SIGPIPE).
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, nullptr);
    dup2(null_fd, 0);
    dup2(out_pipe[1], 1);
    dup2(err_fd, 2);
    execve(argv[0], argv.data(), envp.data());
    const char msg[] = "exec failed\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_fd);
  close(null_fd);
  p->pid_ = pid;
  p->pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // -1 on old kernels
  const int read_fd = out_pipe[0];
  p->reader_ = std::thread([proc = p.get(), read_fd] { proc->readStdout(read_fd); });
  return p;
}

Process::~Process() {
  if (pid_ > 0 && !exit_code_) stop();
  if (reader_.joinable()) reader_.join();
  if (pidfd_ >= 0) close(pidfd_);
  if (owns_log_dir_) removeTempDir(options_.log_dir);
}

void Process::readStdout(int fd) {
  FILE* file = fopen(stdout_path_.c_str(), "wb");
  std::string partial;
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (file) {
      fwrite(buf, 1, n, file);
      fflush(file);
    }
    partial.append(buf, n);
    std::lock_guard<std::mutex> lock(mu_);
    size_t pos;
    while ((pos = partial.find('\n')) != std::string::npos) {
      lines_.push_back(partial.substr(0, pos));
      partial.erase(0, pos + 1);
    }
    cv_.notify_all();
  }
  if (file) fclose(file);
  close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  if (!partial.empty()) lines_.push_back(partial);
  stdout_closed_ = true;
  cv_.notify_all();
}

StatusOr<std::vector<std::string>> Process::waitForLine(const std::string& pattern,
                                                        std::chrono::milliseconds timeout) {
  const std::regex re(pattern);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    for (; next_line_ < lines_.size(); ++next_line_) {
      std::smatch m;
      if (std::regex_search(lines_[next_line_], m, re)) {
        std::vector<std::string> out;
        for (const auto& g : m) out.push_back(g.str());
        ++next_line_;
        return out;
      }
    }
    if (stdout_closed_) {
      return unavailable(options_.name + ": stdout ended before a line matched /" + pattern + "/");
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && next_line_ == lines_.size()) {
      return unavailable(options_.name + ": no line matched /" + pattern + "/ in time");
    }
  }
}

std::optional<int> Process::waitExit(std::chrono::milliseconds timeout) {
  if (exit_code_) return exit_code_;
  if (pid_ <= 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = exitCodeOf(status);
      // The reader thread may not have drained the pipe yet: let stdoutText() see everything
      // the child wrote (bounded, in case a grandchild still holds the pipe open).
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::seconds(2), [this] { return stdout_closed_; });
      return exit_code_;
    }
    if (r < 0 && errno != EINTR) {
      exit_code_ = -1;
      return exit_code_;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (pidfd_ >= 0) {
      // Readable when the child exits: a wait on the condition, not a sleep.
      pollfd pfd{pidfd_, POLLIN, 0};
      poll(&pfd, 1, static_cast<int>(left.count()));
    } else {
      usleep(2000);  // old kernels without pidfd: poll waitpid
    }
  }
}

bool Process::running() { return !waitExit(std::chrono::milliseconds(0)).has_value(); }

void Process::signal(int sig) {
  if (pid_ > 0 && !exit_code_) kill(pid_, sig);
}

int Process::stop(std::chrono::milliseconds grace) {
  if (exit_code_) return *exit_code_;
  signal(SIGTERM);
  if (auto code = waitExit(grace)) return *code;
  signal(SIGKILL);
  return waitExit(std::chrono::seconds(30)).value_or(-1);
}

std::string Process::stdoutText() const { return readFile(stdout_path_); }
std::string Process::stderrText() const { return readFile(stderr_path_); }

}  // namespace ferry::testing
