#pragma once
// Per-worker state without thread_local: Envoy's ThreadLocal::SlotAllocator, reduced to what
// ferry keeps per worker (the router's pools, owner forwarding's peer table snapshot,
// per-owner counters and route table).
//
// Config time (main thread, before any worker exists): a component that keeps state per worker
// allocates a slot from the process's WorkerSlots with the factory that makes its value for one
// worker, and keeps the typed slot (an index) in its shared, immutable config.
//
// Run time: each worker (server/worker.h) owns one WorkerContext: its dispatcher plus one value
// per slot, made by the slot's factory on first use. The connection manager and each stream
// carry a reference to their worker's context and hand it to FilterFactory::createFilter() and
// TerminalFilterFactory::createTerminalFilter(); a filter finds its own state with
// worker.get(slot). Nothing is looked up by thread: a test builds a context (or two, for two
// workers) and hands it to what it tests.
//
// Threads: a context's values are made and used on its worker's thread only (requests, and
// callbacks posted to worker.dispatcher()), so they need no lock. They are destroyed with the
// context, after the worker's loop ended.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "proxy/event/dispatcher.h"

namespace ferry::event {

class WorkerContext;
class WorkerSlots;

// A typed index into every worker's context. Copyable; default-constructed means unallocated
// (get() on it aborts).
template <class T>
class WorkerSlot {
 public:
  WorkerSlot() = default;
  size_t index() const { return index_; }

 private:
  friend class WorkerSlots;
  friend class WorkerContext;
  WorkerSlot(size_t index, const WorkerSlots* owner) : index_(index), owner_(owner) {}
  size_t index_ = 0;
  const WorkerSlots* owner_ = nullptr;  // the allocator it came from
};

// The process's slot allocator. Owned by the process (server::WorkerShared), outlives every
// worker and every config that holds one of its slots.
class WorkerSlots {
 public:
  template <class T>
  using Factory = std::function<std::unique_ptr<T>(WorkerContext&)>;

  WorkerSlots() = default;
  WorkerSlots(const WorkerSlots&) = delete;
  WorkerSlots& operator=(const WorkerSlots&) = delete;

  // Main thread, before the first WorkerContext is made from these slots (allocating after
  // aborts: a worker could be reading the list). `make` runs on each worker's thread, the first
  // time that worker asks for the slot; it may ask its context for other slots.
  template <class T>
  WorkerSlot<T> allocate(Factory<T> make) {
    return WorkerSlot<T>(add([make = std::move(make)](WorkerContext& worker) {
                           return std::shared_ptr<void>(make(worker));
                         }),
                         this);
  }
  size_t size() const { return factories_.size(); }

 private:
  friend class WorkerContext;
  using ErasedFactory = std::function<std::shared_ptr<void>(WorkerContext&)>;
  size_t add(ErasedFactory make);
  std::vector<ErasedFactory> factories_;
  std::atomic<bool> sealed_{false};  // a context was made: no more slots
};

// One worker's state. Made by the worker (main thread, before its loop starts), owned by it;
// the worker's connection managers and streams hold references to it.
class WorkerContext {
 public:
  WorkerContext(Dispatcher& dispatcher, WorkerSlots& slots);
  // Destroys the values in the reverse order of their making (one made from another goes
  // first).
  ~WorkerContext();
  WorkerContext(const WorkerContext&) = delete;
  WorkerContext& operator=(const WorkerContext&) = delete;

  Dispatcher& dispatcher() { return dispatcher_; }

  // The worker's value for `slot`, made on first use; lives as long as this context. Worker
  // thread only. Aborts for a slot of another WorkerSlots or an unallocated one: that is a
  // wiring error, not a request's failure.
  template <class T>
  T& get(const WorkerSlot<T>& slot) {
    return *static_cast<T*>(value(slot.index_, slot.owner_));
  }

 private:
  void* value(size_t index, const WorkerSlots* owner);

  Dispatcher& dispatcher_;
  const WorkerSlots& slots_;
  std::vector<std::shared_ptr<void>> values_;  // by slot index; null until first use
  std::vector<size_t> made_;                   // slot indexes in the order their values were made
};

}  // namespace ferry::event
