#pragma once
// The TLS context new connections use, swapped whole when its files are re-read (SIGHUP, on the
// main thread), as the peer table is. Workers take current() once per new connection (a short
// lock); a connection keeps the context it was made with (its session holds a reference), so
// a swap never disturbs connections already open. Used for the client context of upstream
// pools (forwarding.tls) and the server context of the listener (listener.tls).

#include <memory>
#include <mutex>

namespace ferry::tls {

template <typename Context>
class ContextSlot {
 public:
  explicit ContextSlot(std::shared_ptr<Context> initial) : current_(std::move(initial)) {}
  std::shared_ptr<Context> current() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return current_;
  }
  void set(std::shared_ptr<Context> next) {
    std::lock_guard<std::mutex> lock(mutex_);
    current_ = std::move(next);
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<Context> current_;
};

}  // namespace ferry::tls
