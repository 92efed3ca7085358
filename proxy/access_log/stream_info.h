#pragma once
// Per-stream facts that filters write for the access log (key -> value), as Envoy's dynamic
// metadata: a filter with its own log field writes it here and declares it once at start
// (access_log::InfoField, by the composition root); nothing in proxy/ names it.
//
// Owned by the stream (http/active_stream.h); filters reach it through
// StreamFilterCallbacks::streamInfo() until onDestroy() (where they may still write); the
// stream hands it to the access log when it ends. One worker thread; a handful of entries, so a
// vector searched in order.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry::access_log {

class StreamInfo {
 public:
  // Sets `key` to `value`; the last write wins.
  void set(std::string_view key, std::string_view value) {
    for (auto& [k, v] : fields_) {
      if (k == key) {
        v.assign(value);
        return;
      }
    }
    // Room for a filter's fields at once (owner forwarding writes three): one allocation, not
    // one per doubling.
    if (fields_.empty()) fields_.reserve(kTypicalFields);
    fields_.emplace_back(std::string(key), std::string(value));
  }
  void erase(std::string_view key) {
    for (auto it = fields_.begin(); it != fields_.end(); ++it) {
      if (it->first == key) {
        fields_.erase(it);
        return;
      }
    }
  }
  // The value, or nullopt when nothing was written for `key`.
  std::optional<std::string_view> get(std::string_view key) const {
    for (const auto& [k, v] : fields_) {
      if (k == key) return std::string_view(v);
    }
    return std::nullopt;
  }

 private:
  static constexpr size_t kTypicalFields = 4;
  std::vector<std::pair<std::string, std::string>> fields_;
};

}  // namespace ferry::access_log
