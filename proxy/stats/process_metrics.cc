#include "proxy/stats/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace ferry::stats {

namespace {

// Seconds since the epoch when the process started: /proc/self/stat field 22 (clock ticks
// since boot) plus /proc/stat's btime. Falls back to "now" (the caller runs at start-up).
double readStartTime() {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Field 2 (comm) may hold spaces and parentheses: count fields after the last ')'.
  auto paren = text.rfind(')');
  if (paren == std::string::npos) return now;
  std::istringstream rest(text.substr(paren + 2));
  std::string field;
  unsigned long long start_ticks = 0;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 22) start_ticks = std::stoull(field);
  }
  std::ifstream proc_stat("/proc/stat");
  std::string line;
  unsigned long long btime = 0;
  while (std::getline(proc_stat, line)) {
    if (line.rfind("btime ", 0) == 0) btime = std::stoull(line.substr(6));
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  if (btime == 0 || ticks <= 0) return now;
  return static_cast<double>(btime) + static_cast<double>(start_ticks) / ticks;
}

long residentBytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0;
  long resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * ::sysconf(_SC_PAGESIZE);
}

long openFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  long count = 0;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count - 1;  // the descriptor opendir itself holds
}

void family(std::ostringstream& out, const char* name, const char* type, const char* help,
            const std::string& value) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
      << name << " " << value << "\n";
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

}  // namespace

ProcessMetrics::ProcessMetrics() : start_time_seconds_(readStartTime()) {}

std::string ProcessMetrics::render() const {
  std::ostringstream out;
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                     static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  family(out, "process_cpu_seconds_total", "counter",
         "Total user and system CPU time spent in seconds.", fixed(cpu, 6));
  family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
         std::to_string(residentBytes()));
  family(out, "process_open_fds", "gauge", "Number of open file descriptors.",
         std::to_string(openFds()));
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
           limit.rlim_cur == RLIM_INFINITY ? "+Inf" : std::to_string(limit.rlim_cur));
  }
  family(out, "process_start_time_seconds", "gauge",
         "Start time of the process since unix epoch in seconds.", fixed(start_time_seconds_, 2));
  return out.str();
}

}  // namespace ferry::stats
