#pragma once
// Counters, gauges and histograms shared by all workers, rendered by the admin listener as
// Prometheus text (GET /stats). Creating a metric takes a lock (startup, or the first time a
// label value such as an owner name is seen); updating one is a relaxed atomic, so the request
// path never waits on another thread.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ferry::stats {

// Label pairs, e.g. {{"owner", "inst-2"}}. Rendered in the given order.
using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void add(int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  void sub(int64_t n) { value_.fetch_sub(n, std::memory_order_relaxed); }
  void set(int64_t n) { value_.store(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Fixed exponential buckets in microseconds (50 µs .. ~100 s).
class Histogram {
 public:
  static const std::vector<uint64_t>& bucketBounds();
  Histogram();
  void observeMicros(uint64_t micros);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t sumMicros() const { return sum_.load(std::memory_order_relaxed); }
  uint64_t bucketCount(size_t i) const { return buckets_[i].load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
};

class Store {
 public:
  // Get-or-create. References stay valid for the Store's life.
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, const Labels& labels = {});
  // Declares a family whose series appear on first use (e.g. one per owner), so /stats lists
  // it (HELP and TYPE) from the start and a reader can tell "none yet" from "no such metric".
  void declareCounter(const std::string& name, const std::string& help);
  void declareHistogram(const std::string& name, const std::string& help);
  // Value of a counter or gauge by name and labels: 0 when the family exists without that
  // series, -1 when no family has that name (a misspelt name must not read as 0). Tests should
  // prefer tests/support/stats/stats_lookup.h, which fails the test and names the series.
  int64_t valueOf(const std::string& name, const Labels& labels = {}) const;
  std::string renderPrometheus() const;

 private:
  enum class Kind { Counter, Gauge, Histogram };
  struct Family {
    Kind kind;
    std::string help;
    std::map<std::string, std::unique_ptr<Counter>> counters;  // key: rendered labels
    std::map<std::string, std::unique_ptr<Gauge>> gauges;
    std::map<std::string, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(const std::string& name, const std::string& help, Kind kind);

  mutable std::mutex lock_;
  std::map<std::string, Family> families_;
};

// Renders labels as Prometheus does: {a="x",b="y"} ("" when empty).
std::string renderLabels(const Labels& labels);

}  // namespace ferry::stats
