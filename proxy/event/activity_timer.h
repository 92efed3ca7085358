#pragma once
// A timeout measured from the last activity: it fires once `timeout` has passed with no
// touch(). Made for timers that bytes reset (a stream's idle timeout, a request body's):
// touch() only notes the time, so a chunk costs no timer re-arm; the timer is armed once and,
// when it fires before the quiet period is over, re-arms itself for what is left. The
// dispatcher's timer is made at the first touch(): a stream has one of these per timeout, and
// most are never touched on most requests (a GET never starts the request body's). It is
// leased from the dispatcher (Dispatcher::leaseTimer): a stream's idle timer was a libevent
// add and delete per request, a leased one that earlier streams left pending is re-armed
// without either.
//
// A second ActivityTimer can share the first one's dispatcher timer (the constructor taking a
// `host`): the timer then wakes up at the earlier of the two deadlines and each fires on its
// own quiet period, as two timers would. A stream's request body timer shares its idle timer:
// touched first, the body's (15 s) arms the one timer and the idle one (300 s) finds it armed
// earlier already, so a request with a body costs one timer made, added and deleted, like one
// without (it was two of each).
//
// Owned by whoever owns the callback's target, on one dispatcher's thread; disable() (or the
// destructor) before that target goes. A host outlives the timer that shares it. A callback must
// not destroy the timers (the host looks at both after it returns): a stream that ends from its
// timeout is deleted later (Dispatcher::deferredDelete).

#include <chrono>
#include <functional>

#include "proxy/event/dispatcher.h"

namespace ferry::event {

class ActivityTimer {
 public:
  // `timeout` 0 = never fires (touch() does nothing).
  ActivityTimer(Dispatcher& dispatcher, Millis timeout, std::function<void()> on_timeout);
  // Shares `host`'s dispatcher timer (see above); `host` has no other sharer.
  ActivityTimer(ActivityTimer& host, Millis timeout, std::function<void()> on_timeout);
  ActivityTimer(const ActivityTimer&) = delete;
  ActivityTimer& operator=(const ActivityTimer&) = delete;

  // Activity now: the quiet period starts again (arms the timer when it is not armed).
  void touch();
  // Stops it until the next touch().
  void disable();

 private:
  using Clock = std::chrono::steady_clock;
  // The host's dispatcher timer fired: runs whichever quiet period is over, re-arms for the rest.
  void onTimer();
  // Host, after it fired: the timer wakes up at the earliest deadline of those armed (none: off).
  void schedule(Clock::time_point now);

  Dispatcher& dispatcher_;
  const Millis timeout_;
  std::function<void()> on_timeout_;
  ActivityTimer& host_;             // *this, or the timer whose dispatcher timer this one shares
  ActivityTimer* guest_ = nullptr;  // host: the one sharing its dispatcher timer
  TimerLease timer_;                // host: leased by the first touch() (either's)
  bool armed_ = false;
  Clock::time_point last_activity_;
};

}  // namespace ferry::event
