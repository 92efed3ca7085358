// Tests proxy/event/worker_context.cc: a slot's value is one per worker (two contexts never
// share it), made on first use on the worker's own thread with its dispatcher, found again by
// the slot that made it (two components with slots of one type each find their own), and
// destroyed with the context in the reverse order of making. Wiring errors abort.

#include "proxy/event/worker_context.h"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "proxy/event/dispatcher.h"

namespace ferry::event {
namespace {

struct Counter {
  int value = 0;
};

TEST(WorkerContextTest, EachWorkerHasItsOwnValue) {
  WorkerSlots slots;
  int made = 0;
  WorkerSlot<Counter> slot = slots.allocate<Counter>([&](WorkerContext&) {
    ++made;
    return std::make_unique<Counter>();
  });
  Dispatcher d1, d2;
  WorkerContext one(d1, slots);
  WorkerContext two(d2, slots);
  one.get(slot).value = 1;
  two.get(slot).value = 2;
  EXPECT_EQ(one.get(slot).value, 1);
  EXPECT_EQ(two.get(slot).value, 2);
  EXPECT_NE(&one.get(slot), &two.get(slot));
  EXPECT_EQ(&one.get(slot), &one.get(slot)) << "made once, then found again";
  EXPECT_EQ(made, 2);
}

TEST(WorkerContextTest, MadeOnFirstUseWithItsWorkersDispatcher) {
  WorkerSlots slots;
  Dispatcher* seen = nullptr;
  auto slot = slots.allocate<Counter>([&](WorkerContext& worker) {
    seen = &worker.dispatcher();
    return std::make_unique<Counter>();
  });
  Dispatcher dispatcher;
  WorkerContext worker(dispatcher, slots);
  EXPECT_EQ(seen, nullptr) << "nothing made before first use";
  worker.get(slot);
  EXPECT_EQ(seen, &dispatcher);
}

// What a filter factory does: it allocates its slot when its config is built and finds its
// own value through it; another factory's slot of the same type is another value.
TEST(WorkerContextTest, EachComponentFindsItsOwnSlot) {
  WorkerSlots slots;
  auto make = [](WorkerContext&) { return std::make_unique<Counter>(); };
  WorkerSlot<Counter> first = slots.allocate<Counter>(make);
  WorkerSlot<Counter> second = slots.allocate<Counter>(make);
  EXPECT_NE(first.index(), second.index());
  Dispatcher dispatcher;
  WorkerContext worker(dispatcher, slots);
  worker.get(first).value = 7;
  EXPECT_EQ(worker.get(second).value, 0);
  EXPECT_EQ(worker.get(first).value, 7);
}

TEST(WorkerContextTest, ValuesAreMadeOnTheWorkersThread) {
  WorkerSlots slots;
  std::thread::id made_on;
  auto slot = slots.allocate<Counter>([&](WorkerContext&) {
    made_on = std::this_thread::get_id();
    return std::make_unique<Counter>();
  });
  Dispatcher dispatcher;
  WorkerContext worker(dispatcher, slots);  // main thread, as server::Worker does
  std::promise<std::thread::id> ran_on;
  std::thread loop([&] { dispatcher.run(); });
  dispatcher.post([&] {
    worker.get(slot).value = 1;
    ran_on.set_value(std::this_thread::get_id());
    dispatcher.exit();
  });
  const std::thread::id worker_thread = ran_on.get_future().get();
  loop.join();
  EXPECT_EQ(made_on, worker_thread);
  EXPECT_NE(made_on, std::this_thread::get_id());
}

struct Logged {
  Logged(std::vector<std::string>& log, std::string name) : log_(log), name_(std::move(name)) {}
  ~Logged() { log_.push_back(name_); }
  std::vector<std::string>& log_;
  std::string name_;
};

TEST(WorkerContextTest, ValuesDieInReverseOrderOfMaking) {
  WorkerSlots slots;
  std::vector<std::string> destroyed;
  // `user` is allocated first but made last: its factory asks for `base`, allocated after it.
  // Reverse order of allocation would destroy `base` first, under `user`.
  WorkerSlot<Logged> base;
  auto user = slots.allocate<Logged>([&](WorkerContext& worker) {
    worker.get(base);
    return std::make_unique<Logged>(destroyed, "user");
  });
  base = slots.allocate<Logged>(
      [&](WorkerContext&) { return std::make_unique<Logged>(destroyed, "base"); });
  {
    Dispatcher dispatcher;
    WorkerContext worker(dispatcher, slots);
    worker.get(user);
  }
  EXPECT_EQ(destroyed, (std::vector<std::string>{"user", "base"}));
}

using WorkerContextDeathTest = ::testing::Test;

TEST(WorkerContextDeathTest, AllocatingAfterAContextWasMadeAborts) {
  WorkerSlots slots;
  Dispatcher dispatcher;
  WorkerContext worker(dispatcher, slots);
  EXPECT_DEATH(slots.allocate<Counter>([](WorkerContext&) { return std::make_unique<Counter>(); }),
               "slot allocated after a worker context was made");
}

TEST(WorkerContextDeathTest, ASlotOfOtherSlotsAborts) {
  WorkerSlots mine, theirs;
  auto slot = theirs.allocate<Counter>([](WorkerContext&) { return std::make_unique<Counter>(); });
  Dispatcher dispatcher;
  WorkerContext worker(dispatcher, mine);
  EXPECT_DEATH(worker.get(slot), "slot of another WorkerSlots");
}

TEST(WorkerContextDeathTest, AnUnallocatedSlotAborts) {
  WorkerSlots slots;
  Dispatcher dispatcher;
  WorkerContext worker(dispatcher, slots);
  EXPECT_DEATH(worker.get(WorkerSlot<Counter>{}), "slot never allocated");
}

}  // namespace
}  // namespace ferry::event
