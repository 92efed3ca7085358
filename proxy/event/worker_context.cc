#include "proxy/event/worker_context.h"

#include <cstdio>
#include <cstdlib>

namespace ferry::event {

namespace {
[[noreturn]] void wiringError(const char* what) {
  std::fprintf(stderr, "ferry: worker context: %s\n", what);
  std::abort();
}
}  // namespace

size_t WorkerSlots::add(ErasedFactory make) {
  if (sealed_.load(std::memory_order_relaxed)) {
    wiringError("slot allocated after a worker context was made");
  }
  factories_.push_back(std::move(make));
  return factories_.size() - 1;
}

WorkerContext::WorkerContext(Dispatcher& dispatcher, WorkerSlots& slots)
    : dispatcher_(dispatcher), slots_(slots), values_(slots.size()) {
  slots.sealed_.store(true, std::memory_order_relaxed);
  made_.reserve(values_.size());
}

WorkerContext::~WorkerContext() {
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) values_[*it].reset();
}

void* WorkerContext::value(size_t index, const WorkerSlots* owner) {
  if (owner != &slots_) {
    wiringError(owner == nullptr ? "slot never allocated" : "slot of another WorkerSlots");
  }
  std::shared_ptr<void>& value = values_[index];
  if (!value) {
    // The factory may ask for other slots: values_ never grows here, so `value` stays valid.
    std::shared_ptr<void> made = slots_.factories_[index](*this);
    value = std::move(made);
    made_.push_back(index);
  }
  return value.get();
}

}  // namespace ferry::event
