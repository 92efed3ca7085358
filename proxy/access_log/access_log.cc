#include "proxy/access_log/access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace ferry::access_log {

StatusOr<std::shared_ptr<AccessLog>> AccessLog::open(const std::string& path) {
  if (path == "-") return std::shared_ptr<AccessLog>(new AccessLog(STDOUT_FILENO, false));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return unavailable("access_log: cannot open " + path + ": " + std::strerror(errno));
  return std::shared_ptr<AccessLog>(new AccessLog(fd, true));
}

Status AccessLog::checkWritable(const std::string& path) {
  if (path == "-") return Status::ok();
  // An existing file must be writable; a new one needs a writable directory to be created in.
  std::string target = path;
  if (::access(path.c_str(), F_OK) != 0) {
    auto slash = path.rfind('/');
    target = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  }
  if (::access(target.c_str(), W_OK) != 0) {
    return unavailable("access_log: cannot open " + path + " for writing (" + target + ": " +
                       std::strerror(errno) + ")");
  }
  return Status::ok();
}

AccessLog::~AccessLog() {
  if (owned_) ::close(fd_);
}

std::string formatEntry(const Entry& e) {
  std::time_t secs = std::chrono::system_clock::to_time_t(e.start);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                    e.start.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char when[40];
  std::snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  char numbers[160];
  std::snprintf(numbers, sizeof(numbers), " %d req=%llu resp=%llu dur=%.1fms upstream=", e.status,
                static_cast<unsigned long long>(e.request_bytes),
                static_cast<unsigned long long>(e.response_bytes),
                static_cast<double>(e.duration.count()) / 1000.0);
  std::string line = when;
  line += " \"";
  line += e.method;
  line += ' ';
  line += e.path;
  line += '"';
  line += numbers;
  line += e.upstream;
  line += " end=";
  line += e.end;
  if (!e.peer.empty()) {
    // The identity comes from a certificate: quote it, and escape what could break the line.
    line += " peer=\"";
    for (char c : e.peer) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f || c == '"' || c == '\\') {
        char hex[5];
        std::snprintf(hex, sizeof(hex), "\\x%02x", u);
        line += hex;
      } else {
        line += c;
      }
    }
    line += '"';
  }
  return line;
}

void AccessLog::write(const Entry& entry) {
  std::string line = formatEntry(entry);
  line += '\n';
  // One write per line: O_APPEND keeps whole lines from different workers apart.
  ssize_t written = ::write(fd_, line.data(), line.size());
  (void)written;  // a full disk must not stop the proxy
}

}  // namespace ferry::access_log
