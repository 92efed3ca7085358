#pragma once
// The process's file-descriptor budget (RLIMIT_NOFILE), checked once at start. Every client
// connection holds a socket and, while its request is in flight, usually an upstream socket
// too; past the limit accept() fails and the listeners back off (net/listener.h).

#include <cstdint>
#include <string>

namespace ferry::server {

struct FdLimits {
  uint64_t soft = 0;  // RLIM_INFINITY reads as UINT64_MAX
  uint64_t hard = 0;
  bool raised = false;  // the soft limit was raised to the hard limit
};

// Raises the soft RLIMIT_NOFILE to the hard limit (what an unprivileged process may do) and
// returns the limits in force afterwards.
FdLimits raiseFdLimit();

// Descriptors ferry needs to honour `max_connections` downstream connections (two each) plus
// its fixed ones (listeners, event loops, admin connections, logs, the fleet file).
uint64_t descriptorsNeeded(uint32_t max_connections, uint32_t workers,
                           uint32_t admin_max_connections);

// A start-up warning when `limits.soft` cannot hold `needed` descriptors; empty when it can.
std::string fdBudgetWarning(const FdLimits& limits, uint64_t needed, uint32_t max_connections);

}  // namespace ferry::server
