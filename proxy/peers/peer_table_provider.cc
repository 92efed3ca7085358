#include "proxy/peers/peer_table_provider.h"

namespace ferry::peers {

namespace {
// One slot per thread and provider. Workers serve one provider; the owner check keeps tests
// that run several servers in one process apart.
struct Slot {
  const PeerTableProvider* owner = nullptr;
  PeerTableSharedPtr table;
};
thread_local Slot tls_slot;
}  // namespace

void PeerTableProvider::publish(PeerTableSharedPtr table) {
  {
    std::lock_guard<std::mutex> guard(lock_);
    latest_ = table;
  }
  for (event::Dispatcher* worker : workers_) {
    worker->post([this, table] {
      tls_slot.owner = this;
      tls_slot.table = table;
    });
  }
}

PeerTableSharedPtr PeerTableProvider::current() const {
  if (tls_slot.owner == this && tls_slot.table) return tls_slot.table;
  return latest();
}

PeerTableSharedPtr PeerTableProvider::latest() const {
  std::lock_guard<std::mutex> guard(lock_);
  return latest_;
}

}  // namespace ferry::peers
