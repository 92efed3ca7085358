#include "proxy/event/activity_timer.h"

namespace ferry::event {

ActivityTimer::ActivityTimer(Dispatcher& dispatcher, Millis timeout,
                             std::function<void()> on_timeout)
    : dispatcher_(dispatcher), timeout_(timeout), on_timeout_(std::move(on_timeout)) {}

void ActivityTimer::touch() {
  if (timeout_.count() <= 0) return;
  if (!timer_) timer_.emplace(dispatcher_.base(), [this] { onTimer(); });
  last_activity_ = std::chrono::steady_clock::now();
  if (!armed_) {
    armed_ = true;
    timer_->enable(timeout_);
  }
}

void ActivityTimer::disable() {
  if (!timer_) return;
  armed_ = false;
  timer_->disable();
}

void ActivityTimer::onTimer() {
  armed_ = false;
  auto quiet = std::chrono::steady_clock::now() - last_activity_;
  if (quiet < timeout_) {
    armed_ = true;
    timer_->enable(std::chrono::ceil<Millis>(timeout_ - quiet));
    return;
  }
  on_timeout_();
}

}  // namespace ferry::event
