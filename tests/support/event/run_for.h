#pragma once
// Tests' way to run a real dispatcher for a while: the loop runs until `limit` has passed (a
// safety net against a timer under test that never fires, and the last deadline it waits for).

#include <chrono>

#include "proxy/event/dispatcher.h"

namespace ferry::testing {

inline void runFor(event::Dispatcher& dispatcher, std::chrono::milliseconds limit) {
  auto stop = dispatcher.createTimer([&] { dispatcher.exit(); });
  stop->enable(limit);
  dispatcher.run();
}

}  // namespace ferry::testing
