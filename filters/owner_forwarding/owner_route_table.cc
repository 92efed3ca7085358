#include "filters/owner_forwarding/owner_route_table.h"

namespace ferry::filters {

namespace {
constexpr char kEvictions[] = "ferry_owner_routing_evictions_total";
constexpr char kEvictionsHelp[] = "Owner routing entries removed, by cause";
}  // namespace

OwnerRouteTableStats::OwnerRouteTableStats(stats::Store& store)
    : entries(store.gauge("ferry_owner_routing_entries",
                          "Stream -> owner entries held, over all workers")),
      learned(store.counter("ferry_owner_routing_learned_total",
                            "Owner routing evidence: an owner answered a forward with no 409")),
      evicted_capacity(store.counter(kEvictions, kEvictionsHelp, {{"reason", "capacity"}})),
      evicted_expired(store.counter(kEvictions, kEvictionsHelp, {{"reason", "expired"}})),
      evicted_owner_gone(store.counter(kEvictions, kEvictionsHelp, {{"reason", "owner_gone"}})) {}

OwnerRouteTable::~OwnerRouteTable() = default;

const std::string* OwnerRouteTable::find(const std::string& key, Clock::time_point now) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  if (now >= it->second.expires) {
    stats_.evicted_expired.inc();
    erase(it);
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return &it->second.owner;
}

void OwnerRouteTable::learn(const std::string& key, std::string_view owner, Clock::time_point now) {
  if (max_entries_ == 0) return;
  stats_.learned.inc();
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    it->second.owner.assign(owner);
    it->second.expires = now + ttl_;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return;
  }
  if (entries_.size() >= max_entries_) {
    stats_.evicted_capacity.inc();
    erase(entries_.find(*lru_.back()));
  }
  it = entries_.emplace(key, Entry{std::string(owner), now + ttl_, {}}).first;
  lru_.push_front(&it->first);
  it->second.lru = lru_.begin();
  stats_.entries.add(1);
}

void OwnerRouteTable::forget(const std::string& key, Drop why) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  if (why == Drop::Expired) stats_.evicted_expired.inc();
  if (why == Drop::OwnerGone) stats_.evicted_owner_gone.inc();
  erase(it);
}

void OwnerRouteTable::erase(std::unordered_map<std::string, Entry>::iterator it) {
  lru_.erase(it->second.lru);
  entries_.erase(it);
  stats_.entries.sub(1);
}

}  // namespace ferry::filters
