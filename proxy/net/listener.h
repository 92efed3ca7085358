#pragma once
// A listening TCP socket bound to one worker's dispatcher. Every worker binds its own socket on
// the same address with SO_REUSEPORT, so the kernel spreads accepted connections over workers
// and no lock sits on the accept path.
//
// Out of file descriptors (EMFILE/ENFILE) or socket memory, accept() fails while the pending
// connection stays queued, so the socket stays readable: retrying at once spins a core (and
// libevent would log every failure). The listener instead stops accepting for a short backoff
// and reports the failure once per backoff, as Envoy and HAProxy pause their listeners.

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
  // Called when accept() failed with `error` (an errno) and accepting paused for the backoff.
  // The listener itself logs the failure to stderr, at most once per kAcceptErrorLogInterval
  // for the whole process (the count of failures since the last line goes with it).
  using AcceptErrorCallback = std::function<void(int error)>;
  static constexpr event::Millis kAcceptBackoff{100};
  static constexpr event::Millis kAcceptErrorLogInterval{10'000};

  // Binds host:port (port 0: the kernel picks) and starts accepting.
  static StatusOr<std::unique_ptr<Listener>> create(event::Dispatcher& dispatcher,
                                                    const std::string& host, uint16_t port,
                                                    AcceptCallback on_accept,
                                                    AcceptErrorCallback on_error = nullptr);
  ~Listener();
  uint16_t port() const { return port_; }
  // A descriptor was freed: end a backoff early (the queued clients need not wait for it).
  void onDescriptorReleased();
  bool backingOff() const { return backing_off_; }

 private:
  Listener(event::Dispatcher& dispatcher, evconnlistener* listener, std::string address,
           uint16_t port, AcceptCallback on_accept, AcceptErrorCallback on_error);
  static void onAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg);
  static void onAcceptError(evconnlistener*, void* arg);
  void resume();
  evconnlistener* listener_;
  std::string address_;  // host:port, for the log
  uint16_t port_;
  AcceptCallback on_accept_;
  AcceptErrorCallback on_error_;
  event::TimerPtr backoff_timer_;
  bool backing_off_ = false;
};

// Whether host:port is free for a new listener that does not share ports: binds a socket
// without SO_REUSEPORT (SO_REUSEADDR only, so connections in TIME_WAIT do not count) and closes
// it. Every worker's listener sets SO_REUSEPORT, so without this check a second process started
// on the same port would silently share it with the first. The error's errno is in `*error`
// (EADDRINUSE: someone listens there).
Status probeExclusiveBind(const std::string& host, uint16_t port, int* error = nullptr);

// Parses a numeric IPv4/IPv6 host ("localhost" = 127.0.0.1) and port into a socket address.
bool toSockaddr(const std::string& host, uint16_t port, sockaddr_storage& out, socklen_t& len);

}  // namespace ferry::net
