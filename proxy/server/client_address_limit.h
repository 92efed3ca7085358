#pragma once
// limits.max_connections_per_client_address: open client connections per IP address, across
// every worker. Checked once per accepted connection (never per request), so a mutex is cheap
// enough here; the data path takes no lock.
//
// Owned by the Server, shared by its workers (WorkerShared), outlives them.

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ferry::server {

class ClientAddressLimit {
 public:
  // `limit` 0: no limit (acquire() always succeeds and counts nothing).
  explicit ClientAddressLimit(uint32_t limit) : limit_(limit) {}

  bool enabled() const { return limit_ > 0; }
  // The peer address of an accepted socket as a key (the IP's bytes, the port left out);
  // empty when it cannot be read (then the connection is not limited).
  static std::string keyOf(int fd);
  // A connection from `key` opens: false (nothing taken) when it already has `limit` open.
  bool acquire(const std::string& key);
  // A connection acquire() let in has closed.
  void release(const std::string& key);

 private:
  const uint32_t limit_;
  std::mutex mutex_;
  std::unordered_map<std::string, uint32_t> open_;
};

}  // namespace ferry::server
