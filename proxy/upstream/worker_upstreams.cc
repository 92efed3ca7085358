#include "proxy/upstream/worker_upstreams.h"

#include <cstdio>
#include <cstdlib>

namespace ferry::upstream {

namespace {
thread_local WorkerUpstreams* current_upstreams = nullptr;
}  // namespace

WorkerUpstreams::~WorkerUpstreams() = default;

ConnectionPool& WorkerUpstreams::pool(const http::UpstreamTarget& target) {
  for (auto& p : pools_) {
    if (p->target() == target) return *p;
  }
  pools_.push_back(std::make_unique<ConnectionPool>(dispatcher_, target, settings_, stats_));
  return *pools_.back();
}

WorkerUpstreams& WorkerUpstreams::current() {
  if (current_upstreams == nullptr) {
    std::fputs("ferry: no worker upstream context on this thread\n", stderr);
    std::abort();
  }
  return *current_upstreams;
}

WorkerUpstreams::ScopedCurrent::ScopedCurrent(WorkerUpstreams& upstreams)
    : previous_(current_upstreams) {
  current_upstreams = &upstreams;
}

WorkerUpstreams::ScopedCurrent::~ScopedCurrent() { current_upstreams = previous_; }

}  // namespace ferry::upstream
