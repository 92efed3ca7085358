#include "proxy/server/fd_limit.h"

#include <sys/resource.h>

namespace ferry::server {

namespace {
// stdio, the access log, the fleet file and its watcher, the main loop, signal plumbing.
constexpr uint64_t kFixedDescriptors = 32;
// Per worker: its epoll instance, its wake-up eventfd, its listening socket, slack.
constexpr uint64_t kPerWorkerDescriptors = 4;
}  // namespace

FdLimits raiseFdLimit() {
  FdLimits out;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return out;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      limit = raised;
      out.raised = true;
    }
  }
  out.soft = limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : limit.rlim_cur;
  out.hard = limit.rlim_max == RLIM_INFINITY ? UINT64_MAX : limit.rlim_max;
  return out;
}

uint64_t descriptorsNeeded(uint32_t max_connections, uint32_t workers,
                           uint32_t admin_max_connections) {
  return 2 * static_cast<uint64_t>(max_connections) + kPerWorkerDescriptors * workers +
         admin_max_connections + kFixedDescriptors;
}

std::string fdBudgetWarning(const FdLimits& limits, uint64_t needed, uint32_t max_connections) {
  if (limits.soft >= needed) return "";
  const uint64_t fixed = needed - 2 * static_cast<uint64_t>(max_connections);
  const uint64_t fits = limits.soft > fixed ? (limits.soft - fixed) / 2 : 0;
  return "ferry: WARNING: limits.max_connections is " + std::to_string(max_connections) +
         ", which needs about " + std::to_string(needed) +
         " file descriptors (a client and an upstream socket per connection, plus " +
         std::to_string(fixed) + " for listeners, event loops and admin), but RLIMIT_NOFILE is " +
         std::to_string(limits.soft) + " (hard limit " + std::to_string(limits.hard) +
         "): only about " + std::to_string(fits) +
         " connections can be served; past that accept() fails and the listeners pause "
         "(ferry_accept_backoffs_total). Raise the limit (ulimit -n, systemd LimitNOFILE=) or "
         "lower limits.max_connections.";
}

}  // namespace ferry::server
