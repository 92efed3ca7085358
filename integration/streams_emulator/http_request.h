#pragma once
// One HTTP/1.1 request as the emulator's connection hands it to the emulator. Owned by the
// ServerConnection and reused for every request on that connection (clear() keeps the
// capacity, so a keep-alive connection does not allocate per request in the steady state).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry::streams {

struct HttpRequest {
  std::string method;
  std::string url;  // raw request target: path and query
  // Header names lower-cased; values as received.
  std::vector<std::pair<std::string, std::string>> headers;
  size_t header_count = 0;  // entries of `headers` in use (the rest are kept for reuse)
  std::string body;
  size_t body_bytes_seen = 0;  // body bytes read so far, including ones not kept
  bool keep_alive = true;
  bool head_request = false;
  int route_tag = -1;  // set by the emulator at head time, for per-route counters

  std::string_view path() const {
    const size_t q = url.find('?');
    return std::string_view(url).substr(0, q);
  }
  std::string_view query() const {
    const size_t q = url.find('?');
    return q == std::string::npos ? std::string_view() : std::string_view(url).substr(q + 1);
  }
  // The first value of header `lower_name`, or nullptr when absent.
  const std::string* header(std::string_view lower_name) const {
    for (size_t i = 0; i < header_count; ++i) {
      if (headers[i].first == lower_name) return &headers[i].second;
    }
    return nullptr;
  }
  void clear() {
    method.clear();
    url.clear();
    header_count = 0;
    body.clear();
    body_bytes_seen = 0;
    keep_alive = true;
    head_request = false;
    route_tag = -1;
  }
};

// A response header: views that must stay valid until the send call returns.
struct HeaderRef {
  std::string_view name;
  std::string_view value;
};

}  // namespace ferry::streams
