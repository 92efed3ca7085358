#include "proxy/peers/peer_table_provider.h"

namespace ferry::peers {

PeerTableProvider::PeerTableProvider(event::WorkerSlots& slots)
    : slot_(slots.allocate<WorkerTable>(
          [](event::WorkerContext&) { return std::make_unique<WorkerTable>(); })) {}

void PeerTableProvider::publish(PeerTableSharedPtr table) {
  {
    std::lock_guard<std::mutex> guard(lock_);
    latest_ = table;
  }
  for (event::WorkerContext* worker : workers_) {
    // The slot by value, not `this`: the callback does not need the provider to still exist.
    worker->dispatcher().post([slot = slot_, worker, table] { worker->get(slot).table = table; });
  }
}

PeerTableSharedPtr PeerTableProvider::current(event::WorkerContext& worker) const {
  const PeerTableSharedPtr& mine = worker.get(slot_).table;
  if (mine) return mine;
  return latest();
}

PeerTableSharedPtr PeerTableProvider::latest() const {
  std::lock_guard<std::mutex> guard(lock_);
  return latest_;
}

}  // namespace ferry::peers
