#pragma once
// Hands the current peer table to the workers without a lock on the request path. The loader
// (main thread) publishes a new immutable snapshot; the provider posts it to every worker's
// dispatcher, where it lands in a thread-local slot. Requests in flight keep the snapshot
// they started with (a shared_ptr), so a swap never touches them.

#include <memory>
#include <mutex>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "proxy/peers/peer_table.h"

namespace ferry::peers {

class PeerTableProvider {
 public:
  // Worker dispatchers that receive every published table. Call before publishing.
  void addWorker(event::Dispatcher& dispatcher) { workers_.push_back(&dispatcher); }
  // Main thread: makes `table` current everywhere.
  void publish(PeerTableSharedPtr table);
  // Any thread: the table this thread sees (a worker's own copy; others read the latest).
  PeerTableSharedPtr current() const;
  // The latest published table (takes a lock: admin and tests only).
  PeerTableSharedPtr latest() const;

 private:
  std::vector<event::Dispatcher*> workers_;
  mutable std::mutex lock_;
  PeerTableSharedPtr latest_;
};

}  // namespace ferry::peers
