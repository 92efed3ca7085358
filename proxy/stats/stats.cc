#include "proxy/stats/stats.h"

#include <algorithm>
#include <sstream>

namespace ferry::stats {

std::string renderLabels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ",";
    out += labels[i].first + "=\"";
    for (char c : labels[i].second) {
      if (c == '"' || c == '\\') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    out += "\"";
  }
  return out + "}";
}

const std::vector<uint64_t>& Histogram::bucketBounds() {
  static const std::vector<uint64_t> bounds = [] {
    std::vector<uint64_t> b;
    for (uint64_t v = 50; v <= 100'000'000; v *= 2) b.push_back(v);
    return b;
  }();
  return bounds;
}

Histogram::Histogram() : buckets_(new std::atomic<uint64_t>[bucketBounds().size() + 1]) {
  for (size_t i = 0; i <= bucketBounds().size(); ++i) buckets_[i].store(0);
}

void Histogram::observeMicros(uint64_t micros) {
  const auto& bounds = bucketBounds();
  size_t i = std::lower_bound(bounds.begin(), bounds.end(), micros) - bounds.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(micros, std::memory_order_relaxed);
}

Store::Family& Store::family(const std::string& name, const std::string& help, Kind kind) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.kind = kind;
    it->second.help = help;
  }
  return it->second;
}

Counter& Store::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard<std::mutex> guard(lock_);
  auto& slot = family(name, help, Kind::Counter).counters[renderLabels(labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& Store::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard<std::mutex> guard(lock_);
  auto& slot = family(name, help, Kind::Gauge).gauges[renderLabels(labels)];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& Store::histogram(const std::string& name, const std::string& help,
                            const Labels& labels) {
  std::lock_guard<std::mutex> guard(lock_);
  auto& slot = family(name, help, Kind::Histogram).histograms[renderLabels(labels)];
  if (!slot) slot = std::make_unique<Histogram>();
  return *slot;
}

void Store::declareCounter(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> guard(lock_);
  family(name, help, Kind::Counter);
}

void Store::declareHistogram(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> guard(lock_);
  family(name, help, Kind::Histogram);
}

int64_t Store::valueOf(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> guard(lock_);
  auto it = families_.find(name);
  if (it == families_.end()) return -1;
  std::string key = renderLabels(labels);
  if (auto c = it->second.counters.find(key); c != it->second.counters.end()) {
    return static_cast<int64_t>(c->second->value());
  }
  if (auto g = it->second.gauges.find(key); g != it->second.gauges.end()) return g->second->value();
  return 0;
}

namespace {
// Inserts `le` into an already rendered label set.
std::string withLe(const std::string& labels, const std::string& le) {
  std::string pair = "le=\"" + le + "\"";
  if (labels.empty()) return "{" + pair + "}";
  return labels.substr(0, labels.size() - 1) + "," + pair + "}";
}

// Microseconds as exact decimal seconds ("12.000345"). Streaming the double would keep only 6
// significant digits, so a long-running sum loses its sub-second part.
std::string microsAsSeconds(uint64_t micros) {
  std::string frac = std::to_string(micros % 1'000'000);
  return std::to_string(micros / 1'000'000) + "." + std::string(6 - frac.size(), '0') + frac;
}
}  // namespace

std::string Store::renderPrometheus() const {
  std::lock_guard<std::mutex> guard(lock_);
  std::ostringstream out;
  for (const auto& [name, fam] : families_) {
    const char* type = fam.kind == Kind::Counter ? "counter"
                       : fam.kind == Kind::Gauge ? "gauge"
                                                 : "histogram";
    out << "# HELP " << name << " " << fam.help << "\n# TYPE " << name << " " << type << "\n";
    for (const auto& [labels, c] : fam.counters) out << name << labels << " " << c->value() << "\n";
    for (const auto& [labels, g] : fam.gauges) out << name << labels << " " << g->value() << "\n";
    for (const auto& [labels, h] : fam.histograms) {
      const auto& bounds = Histogram::bucketBounds();
      uint64_t cumulative = 0;
      for (size_t i = 0; i < bounds.size(); ++i) {
        cumulative += h->bucketCount(i);
        // Bounds are microseconds; Prometheus convention is seconds.
        std::ostringstream le;
        le << static_cast<double>(bounds[i]) / 1e6;
        out << name << "_bucket" << withLe(labels, le.str()) << " " << cumulative << "\n";
      }
      cumulative += h->bucketCount(bounds.size());
      out << name << "_bucket" << withLe(labels, "+Inf") << " " << cumulative << "\n";
      out << name << "_sum" << labels << " " << microsAsSeconds(h->sumMicros()) << "\n";
      out << name << "_count" << labels << " " << h->count() << "\n";
    }
  }
  return out.str();
}

}  // namespace ferry::stats
