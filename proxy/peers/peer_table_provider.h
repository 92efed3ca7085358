#pragma once
// Hands the current peer table to the workers without a lock on the request path. The loader
// (main thread) publishes a new immutable snapshot; the provider posts it to every worker's
// dispatcher, where it lands in that worker's context (event/worker_context.h, the provider's
// own slot). Requests in flight keep the snapshot they started with (a shared_ptr), so a swap
// never touches them.

#include <memory>
#include <mutex>
#include <vector>

#include "proxy/event/worker_context.h"
#include "proxy/peers/peer_table.h"

namespace ferry::peers {

class PeerTableProvider {
 public:
  // Config time (main thread, before the workers are made): allocates the slot each worker
  // keeps its snapshot in. `slots` outlives the provider's workers.
  explicit PeerTableProvider(event::WorkerSlots& slots);
  // Main thread, before publishing: `worker` receives every published table (posted to its
  // dispatcher). `worker` is its worker's (server::Worker), kept until that loop ended.
  void addWorker(event::WorkerContext& worker) { workers_.push_back(&worker); }
  // Main thread: makes `table` current everywhere.
  void publish(PeerTableSharedPtr table);
  // `worker`'s thread: the table that worker sees, the last one posted to it (latest() until
  // one reached it).
  PeerTableSharedPtr current(event::WorkerContext& worker) const;
  // The latest published table (takes a lock: the main thread, admin and tests).
  PeerTableSharedPtr latest() const;

 private:
  // A worker's snapshot; null until a publish reached the worker.
  struct WorkerTable {
    PeerTableSharedPtr table;
  };
  const event::WorkerSlot<WorkerTable> slot_;
  std::vector<event::WorkerContext*> workers_;
  mutable std::mutex lock_;
  PeerTableSharedPtr latest_;
};

}  // namespace ferry::peers
