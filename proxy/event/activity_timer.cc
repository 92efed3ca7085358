#include "proxy/event/activity_timer.h"

#include <algorithm>
#include <cassert>
#include <optional>

namespace ferry::event {

ActivityTimer::ActivityTimer(Dispatcher& dispatcher, Millis timeout,
                             std::function<void()> on_timeout)
    : dispatcher_(dispatcher),
      timeout_(timeout),
      on_timeout_(std::move(on_timeout)),
      host_(*this) {}

ActivityTimer::ActivityTimer(ActivityTimer& host, Millis timeout, std::function<void()> on_timeout)
    : dispatcher_(host.dispatcher_),
      timeout_(timeout),
      on_timeout_(std::move(on_timeout)),
      host_(host) {
  assert(&host.host_ == &host && host.guest_ == nullptr);
  host.guest_ = this;
}

void ActivityTimer::touch() {
  if (timeout_.count() <= 0) return;
  last_activity_ = Clock::now();
  if (armed_) return;  // the deadline only moves later: the pending wake-up re-arms for the rest
  armed_ = true;
  if (!host_.timer_) host_.timer_ = dispatcher_.leaseTimer([host = &host_] { host->onTimer(); });
  // While either is armed the dispatcher timer is due by its deadline (onTimer() re-arms for
  // what is left): when the other's comes first, it stays as it is.
  const ActivityTimer* other = &host_ == this ? guest_ : &host_;
  if (other != nullptr && other->armed_ &&
      other->last_activity_ + other->timeout_ <= last_activity_ + timeout_) {
    return;
  }
  host_.timer_->enable(timeout_);
}

void ActivityTimer::disable() {
  armed_ = false;
  ActivityTimer* other = &host_ == this ? guest_ : &host_;
  if (host_.timer_ && (other == nullptr || !other->armed_)) host_.timer_->disable();
  // else: the timer may wake up early for this one; onTimer() re-arms for the other.
}

void ActivityTimer::schedule(Clock::time_point now) {
  std::optional<Clock::time_point> earliest;
  for (ActivityTimer* t : {this, guest_}) {
    if (t == nullptr || !t->armed_) continue;
    const Clock::time_point deadline = t->last_activity_ + t->timeout_;
    earliest = earliest ? std::min(*earliest, deadline) : deadline;
  }
  if (!earliest) return;
  timer_->enable(std::max(Millis(0), std::chrono::ceil<Millis>(*earliest - now)));
}

void ActivityTimer::onTimer() {
  const Clock::time_point now = Clock::now();
  // The body's (the guest's) first, as its shorter timeout made it fire first as a timer apart.
  for (ActivityTimer* t : {guest_, this}) {
    if (t == nullptr || !t->armed_ || now - t->last_activity_ < t->timeout_) continue;
    t->armed_ = false;
    t->on_timeout_();  // may touch or disable either: schedule() below covers both
  }
  schedule(Clock::now());
}

}  // namespace ferry::event
