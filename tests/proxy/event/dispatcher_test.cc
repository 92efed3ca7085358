// Deferred deletion on a real dispatcher: an object is deleted after the callback that
// deferred it, at the latest when the loop pass ends, and already when the next read callback
// starts (so a pass over many ready sockets frees each stream before the next one allocates).

#include "proxy/event/dispatcher.h"

#include <gtest/gtest.h>

#include <memory>

namespace ferry::event {
namespace {

// Sets `deleted` when destroyed; optionally defers another object from its destructor.
struct Tracked : public DeferredDeletable {
  Tracked(bool& deleted, Dispatcher* dispatcher = nullptr, bool* next_deleted = nullptr)
      : deleted_(deleted), dispatcher_(dispatcher), next_deleted_(next_deleted) {}
  ~Tracked() override {
    deleted_ = true;
    if (dispatcher_ != nullptr)
      dispatcher_->deferredDelete(std::make_unique<Tracked>(*next_deleted_));
  }
  bool& deleted_;
  Dispatcher* dispatcher_;
  bool* next_deleted_;
};

TEST(DispatcherTest, DeferredObjectDeletedOnLaterLoopTurn) {
  Dispatcher dispatcher;
  bool deleted = false;
  dispatcher.deferredDelete(std::make_unique<Tracked>(deleted));
  EXPECT_FALSE(deleted);
  dispatcher.post([&] { dispatcher.exit(); });
  dispatcher.run();
  EXPECT_TRUE(deleted);
}

TEST(DispatcherTest, NextReadCallbackDeletesWhatEarlierCallbacksDeferred) {
  Dispatcher dispatcher;
  bool first = false;
  bool second = false;
  dispatcher.deferredDelete(std::make_unique<Tracked>(first, &dispatcher, &second));
  dispatcher.enterReadCallback();
  // Deleted before the read runs, and so is what its destructor deferred.
  EXPECT_TRUE(first);
  EXPECT_TRUE(second);

  // Inside a read callback, a nested one (a read handled while another is running) deletes
  // nothing: the objects may still be on the stack.
  bool inner = false;
  dispatcher.deferredDelete(std::make_unique<Tracked>(inner));
  dispatcher.enterReadCallback();
  EXPECT_FALSE(inner);
  dispatcher.leaveReadCallback();
  dispatcher.leaveReadCallback();
  EXPECT_FALSE(inner);
  dispatcher.enterReadCallback();
  EXPECT_TRUE(inner);
  dispatcher.leaveReadCallback();
}

}  // namespace
}  // namespace ferry::event
