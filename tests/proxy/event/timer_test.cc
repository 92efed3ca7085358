// Timer on a real dispatcher: fires once after its delay, not before; re-arming moves the
// deadline either way; disable() cancels (also a fireSoon()); a timer may re-arm itself from
// its callback. disable() keeps libevent's event pending and enable() reuses it, so these also
// cover the early wake-ups that follow. Leased timers (Dispatcher::leaseTimer) go back to the
// dispatcher with that event pending and are lent again with the new owner's callback.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "tests/support/event/run_for.h"

namespace ferry::event {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

using testing::runFor;

// Counts the firings of the timer it gives callback() to, and records when (since the
// recorder was made) it last fired.
struct FiringRecorder {
  std::function<void()> callback() {
    return [this] {
      ++fired;
      fired_at = Clock::now() - start;
    };
  }
  const Clock::time_point start = Clock::now();
  int fired = 0;
  Clock::duration fired_at{};
};

// A timer of its own with a FiringRecorder.
struct RecordingTimer : FiringRecorder {
  explicit RecordingTimer(Dispatcher& dispatcher) : timer(dispatcher.createTimer(callback())) {}
  TimerPtr timer;
};

// Runs `dispatcher` for 300 ms: the timer fired once, after 20 ms and before the 300 ms ended.
void expectFiresOnceAfter20Ms(Dispatcher& dispatcher, const FiringRecorder& r) {
  runFor(dispatcher, milliseconds(300));
  EXPECT_EQ(r.fired, 1);
  EXPECT_GE(r.fired_at, milliseconds(20));
  EXPECT_LT(r.fired_at, milliseconds(300));
}

TEST(TimerTest, FiresOnceAfterItsDelay) {
  Dispatcher dispatcher;
  std::vector<Clock::duration> fired;
  const auto start = Clock::now();
  auto timer = dispatcher.createTimer([&] { fired.push_back(Clock::now() - start); });
  timer->enable(milliseconds(30));
  EXPECT_TRUE(timer->enabled());
  runFor(dispatcher, milliseconds(150));
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_GE(fired[0], milliseconds(30));
  EXPECT_FALSE(timer->enabled());
}

TEST(TimerTest, DisableCancels) {
  Dispatcher dispatcher;
  int fired = 0;
  auto timer = dispatcher.createTimer([&] { ++fired; });
  timer->enable(milliseconds(10));
  timer->disable();
  EXPECT_FALSE(timer->enabled());
  auto soon = dispatcher.createTimer([&] { ++fired; });
  soon->fireSoon();
  soon->disable();
  runFor(dispatcher, milliseconds(60));
  EXPECT_EQ(fired, 0);
}

TEST(TimerTest, ReEnableWithALaterDeadlineWaitsForIt) {
  // The pending event wakes up at 10 ms; the callback must wait for the new 60 ms deadline.
  Dispatcher dispatcher;
  RecordingTimer r(dispatcher);
  r.timer->enable(milliseconds(10));
  r.timer->enable(milliseconds(60));
  runFor(dispatcher, milliseconds(200));
  EXPECT_EQ(r.fired, 1);
  EXPECT_GE(r.fired_at, milliseconds(60));
}

TEST(TimerTest, ReEnableWithAnEarlierDeadlineFiresEarlier) {
  Dispatcher dispatcher;
  RecordingTimer r(dispatcher);
  r.timer->enable(milliseconds(5000));
  r.timer->enable(milliseconds(20));
  expectFiresOnceAfter20Ms(dispatcher, r);
}

TEST(TimerTest, DisabledThenReEnabledFiresOnceAtTheNewDeadline) {
  // The idle-timer pattern: armed, disarmed, armed again many times before it fires.
  Dispatcher dispatcher;
  int fired = 0;
  auto timer = dispatcher.createTimer([&] { ++fired; });
  for (int i = 0; i < 100; ++i) {
    timer->enable(milliseconds(10));
    timer->disable();
  }
  timer->enable(milliseconds(200));
  runFor(dispatcher, milliseconds(50));
  EXPECT_EQ(fired, 0);  // the first wake-up (10 ms) found the deadline not reached
  EXPECT_TRUE(timer->enabled());
  runFor(dispatcher, milliseconds(400));
  EXPECT_EQ(fired, 1);
}

TEST(TimerTest, FireSoonRunsBeforeAPendingDeadline) {
  Dispatcher dispatcher;
  int fired = 0;
  auto timer = dispatcher.createTimer([&] { ++fired; });
  timer->enable(milliseconds(5000));
  timer->fireSoon();
  runFor(dispatcher, milliseconds(30));
  EXPECT_EQ(fired, 1);
  EXPECT_FALSE(timer->enabled());
}

TEST(TimerTest, EnableAfterFireSoonWaitsForTheDeadline) {
  // As before this change: arming a timer that was told to fire soon replaces that.
  Dispatcher dispatcher;
  RecordingTimer r(dispatcher);
  r.timer->fireSoon();
  r.timer->enable(milliseconds(40));
  runFor(dispatcher, milliseconds(200));
  EXPECT_EQ(r.fired, 1);
  EXPECT_GE(r.fired_at, milliseconds(40));
}

TEST(TimerTest, CallbackMayReArmItsOwnTimer) {
  Dispatcher dispatcher;
  int fired = 0;
  TimerPtr timer;
  timer = dispatcher.createTimer([&] {
    if (++fired < 3) timer->enable(milliseconds(5));
  });
  timer->enable(milliseconds(5));
  runFor(dispatcher, milliseconds(150));
  EXPECT_EQ(fired, 3);
}

TEST(TimerTest, DestroyingAPendingTimerCancelsIt) {
  Dispatcher dispatcher;
  int fired = 0;
  auto timer = dispatcher.createTimer([&] { ++fired; });
  timer->enable(milliseconds(10));
  timer->disable();  // libevent's event stays pending until the timer is destroyed
  timer.reset();
  runFor(dispatcher, milliseconds(50));
  EXPECT_EQ(fired, 0);
}

// Events added to the dispatcher's base: pending timers and the dispatcher's own events.
int addedEvents(Dispatcher& dispatcher) {
  return event_base_get_num_events(dispatcher.base(), EVENT_BASE_COUNT_ADDED);
}

TEST(TimerLeaseTest, AGivenBackTimerIsLentAgainWithTheNewCallbackOnly) {
  Dispatcher dispatcher;
  int first = 0, second = 0;
  TimerLease lease = dispatcher.leaseTimer([&] { ++first; });
  const Timer* lent = lease.get();
  lease->enable(milliseconds(10));
  lease.reset();  // given back armed: it must not fire for its old owner
  TimerLease again = dispatcher.leaseTimer([&] { ++second; });
  EXPECT_EQ(again.get(), lent);
  EXPECT_FALSE(again->enabled());
  runFor(dispatcher, milliseconds(60));
  EXPECT_EQ(first + second, 0);
  again->enable(milliseconds(10));
  runFor(dispatcher, milliseconds(100));
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

TEST(TimerLeaseTest, LentAgainItKeepsItsPendingEventAndWaitsForTheNewDeadline) {
  Dispatcher dispatcher;
  const int idle = addedEvents(dispatcher);
  TimerLease lease = dispatcher.leaseTimer([] {});
  lease->enable(milliseconds(10));
  lease.reset();
  EXPECT_EQ(addedEvents(dispatcher), idle + 1);  // the spare's event is still pending
  FiringRecorder r;
  TimerLease again = dispatcher.leaseTimer(r.callback());
  again->enable(milliseconds(60));
  EXPECT_EQ(addedEvents(dispatcher), idle + 1);  // re-armed without a second event
  runFor(dispatcher, milliseconds(200));
  EXPECT_EQ(r.fired, 1);
  EXPECT_GE(r.fired_at, milliseconds(60));
}

TEST(TimerLeaseTest, LentAgainItFiresBeforeItsOldOwnersLaterWakeUp) {
  Dispatcher dispatcher;
  TimerLease lease = dispatcher.leaseTimer([] {});
  lease->enable(milliseconds(5000));
  lease.reset();
  FiringRecorder r;
  TimerLease again = dispatcher.leaseTimer(r.callback());
  again->enable(milliseconds(20));
  expectFiresOnceAfter20Ms(dispatcher, r);
}

TEST(TimerLeaseTest, AtMost1024SparesAreKeptTheRestAreDeletedWithTheirEvents) {
  Dispatcher dispatcher;
  const int idle = addedEvents(dispatcher);
  std::vector<TimerLease> leases;
  for (int i = 0; i < 1100; ++i) {
    leases.push_back(dispatcher.leaseTimer([] {}));
    leases.back()->enable(milliseconds(60'000));
  }
  EXPECT_EQ(addedEvents(dispatcher), idle + 1100);
  leases.clear();
  EXPECT_EQ(addedEvents(dispatcher), idle + 1024);
}

}  // namespace
}  // namespace ferry::event
