// ActivityTimer on a real dispatcher: it fires once `timeout` has passed since the last touch(),
// counted from the first touch() however long after construction that comes (the dispatcher's
// timer is made then); never touched or a zero timeout, it never fires; disable() stops it
// until the next touch(). Two sharing one dispatcher timer fire each on its own quiet period.

#include "proxy/event/activity_timer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "tests/support/event/run_for.h"

namespace ferry::event {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

using testing::runFor;

// Firing times of an ActivityTimer, since `start`.
struct Recorder {
  const Clock::time_point start = Clock::now();
  std::vector<Clock::duration> fired;
  std::function<void()> callback() {
    return [this] { fired.push_back(Clock::now() - start); };
  }
};

TEST(ActivityTimerTest, FirstTouchLongAfterConstructionStartsTheQuietPeriod) {
  Dispatcher dispatcher;
  Recorder recorder;
  ActivityTimer timer(dispatcher, milliseconds(30), recorder.callback());
  auto first_touch = dispatcher.createTimer([&] { timer.touch(); });
  first_touch->enable(milliseconds(60));
  runFor(dispatcher, milliseconds(250));
  ASSERT_EQ(recorder.fired.size(), 1u);
  EXPECT_GE(recorder.fired[0], milliseconds(90));
}

TEST(ActivityTimerTest, EachTouchPushesTheDeadline) {
  Dispatcher dispatcher;
  Recorder recorder;
  ActivityTimer timer(dispatcher, milliseconds(40), recorder.callback());
  timer.touch();
  auto second_touch = dispatcher.createTimer([&] { timer.touch(); });
  second_touch->enable(milliseconds(25));
  runFor(dispatcher, milliseconds(250));
  ASSERT_EQ(recorder.fired.size(), 1u);
  EXPECT_GE(recorder.fired[0], milliseconds(65));
}

TEST(ActivityTimerTest, NeverTouchedOrZeroTimeoutNeverFires) {
  Dispatcher dispatcher;
  Recorder recorder;
  ActivityTimer untouched(dispatcher, milliseconds(10), recorder.callback());
  ActivityTimer zero(dispatcher, milliseconds(0), recorder.callback());
  zero.touch();
  runFor(dispatcher, milliseconds(80));
  EXPECT_TRUE(recorder.fired.empty());
}

TEST(ActivityTimerTest, DisableStopsItUntilTheNextTouch) {
  Dispatcher dispatcher;
  Recorder recorder;
  ActivityTimer timer(dispatcher, milliseconds(20), recorder.callback());
  timer.touch();
  timer.disable();
  auto again = dispatcher.createTimer([&] { timer.touch(); });
  again->enable(milliseconds(60));
  runFor(dispatcher, milliseconds(250));
  ASSERT_EQ(recorder.fired.size(), 1u);
  EXPECT_GE(recorder.fired[0], milliseconds(80));
}

// A timer sharing another's dispatcher timer (a stream's body timer on its idle timer): each
// fires on its own quiet period, whichever was touched first and whichever is shorter.
TEST(ActivityTimerTest, SharedTimerFiresEachOnItsOwnQuietPeriod) {
  for (bool short_first : {true, false}) {
    SCOPED_TRACE(short_first ? "short one touched first" : "long one touched first");
    Dispatcher dispatcher;
    Recorder host_fired;
    Recorder guest_fired;
    ActivityTimer host(dispatcher, milliseconds(120), host_fired.callback());
    ActivityTimer guest(host, milliseconds(30), guest_fired.callback());
    if (short_first) {
      guest.touch();
      host.touch();
    } else {
      host.touch();
      guest.touch();
    }
    runFor(dispatcher, milliseconds(300));
    ASSERT_EQ(guest_fired.fired.size(), 1u);
    EXPECT_GE(guest_fired.fired[0], milliseconds(30));
    EXPECT_LT(guest_fired.fired[0], milliseconds(110));
    ASSERT_EQ(host_fired.fired.size(), 1u);
    EXPECT_GE(host_fired.fired[0], milliseconds(120));
  }
}

TEST(ActivityTimerTest, DisablingOneSharerLeavesTheOtherRunning) {
  Dispatcher dispatcher;
  Recorder host_fired;
  Recorder guest_fired;
  ActivityTimer host(dispatcher, milliseconds(60), host_fired.callback());
  ActivityTimer guest(host, milliseconds(20), guest_fired.callback());
  guest.touch();
  host.touch();
  guest.disable();
  runFor(dispatcher, milliseconds(200));
  EXPECT_TRUE(guest_fired.fired.empty());
  ASSERT_EQ(host_fired.fired.size(), 1u);
  EXPECT_GE(host_fired.fired[0], milliseconds(60));

  Recorder host2_fired;
  Recorder guest2_fired;
  ActivityTimer host2(dispatcher, milliseconds(20), host2_fired.callback());
  ActivityTimer guest2(host2, milliseconds(60), guest2_fired.callback());
  host2.touch();
  guest2.touch();
  host2.disable();
  runFor(dispatcher, milliseconds(200));
  EXPECT_TRUE(host2_fired.fired.empty());
  ASSERT_EQ(guest2_fired.fired.size(), 1u);
  EXPECT_GE(guest2_fired.fired[0], milliseconds(60));
}

}  // namespace
}  // namespace ferry::event
