// ActivityTimer on a real dispatcher: it fires once `timeout` has passed since the last touch(),
// counted from the first touch() however long after construction that comes (the dispatcher's
// timer is made then); never touched or a zero timeout, it never fires; disable() stops it
// until the next touch().

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

}  // namespace
}  // namespace ferry::event
