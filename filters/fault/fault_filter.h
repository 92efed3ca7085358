#pragma once
// Fault injection (docs/fault-injection.md), as Envoy's envoy.filters.http.fault: for testing
// how clients and the fleet behave when requests fail or are slow. A request is eligible only
// when it carries the configured header (`fault.header`, default x-ferry-fault): an operator
// never gets faults on traffic that did not ask for them. For an eligible request the filter
// draws, independently, whether to delay it (`fault.delay.percent`) and whether to abort it
// (`fault.abort.percent`):
//   delay:         the head is held (StopAndWait) on a dispatcher timer for
//                  `fault.delay.duration`, then the request goes on (continueRequest());
//   abort:         the client is answered at once with `fault.abort.status` and the code
//                  "fault_injected" (sendLocalReply); nothing reaches an upstream;
//   delay + abort: the delay, then the abort (Envoy's order).
// It runs first in the chain (app/filter_setup.cc), before owner forwarding: a faulted request
// was never seen by the local instance or an owner. A client that leaves during a delay ends
// the stream; onDestroy() cancels the timer.
//
// What it did: ferry_fault_*_total (fault_stats.h) and the access-log field "fault"
// (fault_log.h).

#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include "filters/fault/fault_stats.h"
#include "proxy/event/worker_context.h"
#include "proxy/http/filter.h"

namespace ferry::filters {

// Shared, immutable; one per process (built by the composition root from `fault:`).
struct FaultConfig {
  std::string header = "x-ferry-fault";  // only requests carrying it are eligible (lower case)
  uint32_t abort_percent = 0;            // 0..100 of eligible requests
  int abort_status = 503;                // the status of an aborted request's answer
  uint32_t delay_percent = 0;            // 0..100 of eligible requests
  std::chrono::milliseconds delay{1000};
  FaultStats* stats = nullptr;  // not null
  // Each worker's pseudo-random generator for the draws (allocateFaultGenerator()).
  event::WorkerSlot<std::minstd_rand> generator;
  // A number in [0, 100) per draw; a fault with percent p happens when the draw is below p.
  // Empty: the worker's generator. Tests set it to choose the draws.
  std::function<uint32_t()> roll;
};

// The generator slot for FaultConfig::generator: config time, main thread, before the workers
// start (event/worker_context.h). Each worker's generator is seeded on its first draw.
event::WorkerSlot<std::minstd_rand> allocateFaultGenerator(event::WorkerSlots& slots);

class FaultFilter : public http::StreamFilter {
 public:
  // `worker`: the context of the stream's worker (its generator).
  FaultFilter(const FaultConfig& config, event::WorkerContext& worker)
      : config_(config), worker_(worker) {}

  http::FilterStatus onRequestHeaders(http::RequestHeaders& headers, bool end_stream) override;
  void onDestroy() override;

 private:
  // True for `percent` % of draws (never for 0, always for 100).
  bool chosen(uint32_t percent) const;
  void abort();
  void onDelayEnd();

  const FaultConfig& config_;
  event::WorkerContext& worker_;
  event::TimerPtr delay_timer_;  // armed while the request is held
  bool abort_after_delay_ = false;
};

class FaultFilterFactory : public http::FilterFactory {
 public:
  explicit FaultFilterFactory(FaultConfig config) : config_(std::move(config)) {}
  http::StreamFilterPtr createFilter(event::WorkerContext& worker) const override {
    return std::make_unique<FaultFilter>(config_, worker);
  }

 private:
  const FaultConfig config_;
};

}  // namespace ferry::filters
