#pragma once
// Owner routing's memory (project issue 15): stream -> the instance that last proved it owns
// it (it answered a forward for that stream with something other than a 409). Bounded: at
// most `max_entries` (least recently used evicted first), each entry dies `ttl` after its last
// evidence, and an entry whose owner left the peer table is dead (the caller checks the table
// at use and forgets it). The value is an instance name, never a URL: the URL comes from the
// trusted peer table at use.
//
// One table per worker (OwnerRouting::table(worker), a value in the worker's context), like
// upstream::WorkerUpstreams: a worker's streams run on its thread only, so the request path
// reads and writes its table without a lock or an atomic. The cost is that each worker learns
// an owner once for itself (N workers: up to N forwards per stream instead of one), which is
// cheap next to a lock or a shared concurrent map touched by every request of every worker.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "proxy/stats/stats.h"

namespace ferry::filters {

// Shared, immutable counters of every worker's table (relaxed atomics).
struct OwnerRouteTableStats {
  explicit OwnerRouteTableStats(stats::Store& store);
  stats::Gauge& entries;
  stats::Counter& learned;
  stats::Counter& evicted_capacity;    // the table was full: least recently used dropped
  stats::Counter& evicted_expired;     // no evidence for `ttl`
  stats::Counter& evicted_owner_gone;  // the owner left the peer table
};

class OwnerRouteTable {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Drop { Expired, OwnerGone, Wrong };

  OwnerRouteTable(size_t max_entries, std::chrono::milliseconds ttl, OwnerRouteTableStats& stats)
      : max_entries_(max_entries), ttl_(ttl), stats_(stats) {}
  ~OwnerRouteTable();  // does not touch the gauge: the store may already be gone
  OwnerRouteTable(const OwnerRouteTable&) = delete;
  OwnerRouteTable& operator=(const OwnerRouteTable&) = delete;

  // The owner of a live entry for `key`, or nullptr (an expired one is removed).
  const std::string* find(const std::string& key, Clock::time_point now);
  // Evidence: `owner` answered for `key`. Adds the entry or refreshes it (owner and expiry).
  void learn(const std::string& key, std::string_view owner, Clock::time_point now);
  // Drops the entry for `key`, if any (its owner was wrong, unreachable, or left the table).
  void forget(const std::string& key, Drop why);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string owner;
    Clock::time_point expires;
    std::list<const std::string*>::iterator lru;  // position in lru_ (front: most recent)
  };
  void erase(std::unordered_map<std::string, Entry>::iterator it);

  const size_t max_entries_;
  const std::chrono::milliseconds ttl_;
  OwnerRouteTableStats& stats_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<const std::string*> lru_;  // keys of entries_ (node keys are stable)
};

}  // namespace ferry::filters
