#pragma once
// A listening TCP socket bound to one worker's dispatcher. Every worker binds its own socket on
// the same address with SO_REUSEPORT, so the kernel spreads accepted connections over workers
// and no lock sits on the accept path.

#include <event2/listener.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "proxy/common/status.h"
#include "proxy/event/dispatcher.h"

namespace ferry::net {

class Listener {
 public:
  // Called on the dispatcher's thread with each accepted socket; the callee owns `fd`.
  using AcceptCallback = std::function<void(int fd)>;

  // Binds host:port (port 0: the kernel picks) and starts accepting.
  static StatusOr<std::unique_ptr<Listener>> create(event::Dispatcher& dispatcher,
                                                    const std::string& host, uint16_t port,
                                                    AcceptCallback on_accept);
  ~Listener();
  uint16_t port() const { return port_; }

 private:
  Listener(evconnlistener* listener, uint16_t port, AcceptCallback on_accept);
  static void onAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg);
  evconnlistener* listener_;
  uint16_t port_;
  AcceptCallback on_accept_;
};

// Parses a numeric IPv4/IPv6 host ("localhost" = 127.0.0.1) and port into a socket address.
bool toSockaddr(const std::string& host, uint16_t port, sockaddr_storage& out, socklen_t& len);

}  // namespace ferry::net
