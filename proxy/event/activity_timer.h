#pragma once
// A timeout measured from the last activity: it fires once `timeout` has passed with no
// touch(). Made for timers that bytes reset (a stream's idle timeout, a request body's):
// touch() only notes the time, so a chunk costs no timer re-arm; the timer is armed once and,
// when it fires before the quiet period is over, re-arms itself for what is left. The
// dispatcher's timer is made at the first touch(): a stream has one of these per timeout, and
// most are never touched on most requests (a GET never starts the request body's). It is held
// in place, not allocated: a stream's idle timer and a POST's body timer were a malloc and a
// free each per request.
//
// Owned by whoever owns the callback's target, on one dispatcher's thread; disable() (or the
// destructor) before that target goes.

#include <chrono>
#include <functional>
#include <optional>

#include "proxy/event/dispatcher.h"

namespace ferry::event {

class ActivityTimer {
 public:
  // `timeout` 0 = never fires (touch() does nothing).
  ActivityTimer(Dispatcher& dispatcher, Millis timeout, std::function<void()> on_timeout);

  // Activity now: the quiet period starts again (arms the timer when it is not armed).
  void touch();
  // Stops it until the next touch().
  void disable();

 private:
  void onTimer();

  Dispatcher& dispatcher_;
  const Millis timeout_;
  std::function<void()> on_timeout_;
  std::optional<Timer> timer_;  // made by the first touch() (timeout_ > 0)
  bool armed_ = false;
  std::chrono::steady_clock::time_point last_activity_;
};

}  // namespace ferry::event
