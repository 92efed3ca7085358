#include "filters/fault/fault_filter.h"

#include "filters/fault/fault_log.h"

namespace ferry::filters {

event::WorkerSlot<std::minstd_rand> allocateFaultGenerator(event::WorkerSlots& slots) {
  // One per worker: draws need no lock and no shared state. Not for anything secret.
  return slots.allocate<std::minstd_rand>([](event::WorkerContext&) {
    return std::make_unique<std::minstd_rand>(std::random_device{}());
  });
}

bool FaultFilter::chosen(uint32_t percent) const {
  if (percent == 0) return false;
  if (percent >= 100) return true;
  const uint32_t draw =
      config_.roll ? config_.roll() : static_cast<uint32_t>(worker_.get(config_.generator)() % 100);
  return draw < percent;
}

http::FilterStatus FaultFilter::onRequestHeaders(http::RequestHeaders& headers, bool end_stream) {
  if (!headers.headers.has(config_.header)) return http::FilterStatus::Continue;
  // Both draws happen for every eligible request, delay first, so that each percentage holds
  // of all eligible requests whatever the other one is.
  const bool delay = chosen(config_.delay_percent);
  const bool abort_request = chosen(config_.abort_percent);
  if (!delay && !abort_request) return http::FilterStatus::Continue;
  if (!delay) {
    recordFault(callbacks_->streamInfo(), FaultKind::Abort);
    abort();
    return http::FilterStatus::StopAndWait;  // the stream has ended: nothing follows
  }
  recordFault(callbacks_->streamInfo(), abort_request ? FaultKind::DelayAbort : FaultKind::Delay);
  config_.stats->delays.inc();
  abort_after_delay_ = abort_request;
  // The body the client sends meanwhile waits in the chain, before this filter.
  delay_timer_ = callbacks_->dispatcher().createTimer([this] { onDelayEnd(); });
  delay_timer_->enable(config_.delay);
  return http::FilterStatus::StopAndWait;
}

void FaultFilter::onDelayEnd() {
  if (abort_after_delay_) {
    abort();
    return;
  }
  callbacks_->continueRequest();
}

void FaultFilter::abort() {
  config_.stats->aborts.inc();
  callbacks_->sendLocalReply(config_.abort_status, "fault_injected",
                             "fault injection answered this request (fault.abort)", {});
}

void FaultFilter::onDestroy() {
  // The client left during the delay (or the stream ended otherwise): the timer must not fire
  // into an ended stream. Disarmed, not destroyed: onDestroy() may run inside the timer's own
  // callback (continueRequest() -> a filter further on ends the stream); the filter, and the
  // timer with it, is deleted later.
  if (delay_timer_) delay_timer_->disable();
}

}  // namespace ferry::filters
