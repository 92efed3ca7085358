#pragma once
// An upstream that answers every request "200 ok" (keep-alive), on its own thread, for tests
// that send many requests (rotation under load, attacks) without scripting each one. Two paths
// behave otherwise:
//   /hold...   never answered (the connection stays open until the upstream is destroyed);
//   /big/N     a 200 with an N-byte body, written as fast as ferry reads it.
// Requests carry no body (GET).
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace ferry::itest {

class OkUpstream {
 public:
  OkUpstream();
  ~OkUpstream();
  uint16_t port() const { return port_; }
  int requests() const { return requests_.load(); }
  // Requests for /hold... waiting now.
  int held() const { return held_.load(); }

 private:
  void serve(int fd);
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::atomic<int> held_{0};
  std::thread acceptor_;
  std::vector<std::thread> connections_;
};

}  // namespace ferry::itest
