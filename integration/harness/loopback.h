#pragma once
// A listening TCP socket on 127.0.0.1 at a port the kernel picks: what every in-process test
// server (fake upstreams, scripted owners) starts from.

#include <chrono>
#include <cstdint>
#include <vector>

namespace ferry::testing {

// Returns the listening fd (SO_REUSEADDR, close-on-exec, backlog 128) and sets `port`, or -1.
int listenOnLoopback(uint16_t& port);

// A blocking TCP connection to 127.0.0.1:port (close-on-exec): the fd, or -1 (errno set).
// `io_timeout` > 0 bounds the connect and every later read and write on the socket
// (SO_RCVTIMEO / SO_SNDTIMEO, set before connecting).
int connectToLoopback(uint16_t port, std::chrono::milliseconds io_timeout = {});

// A listener on 127.0.0.1 whose accept queue is full: the kernel drops further SYNs, so a
// connect to it neither succeeds nor fails until the connector gives up (a black-holed
// upstream). Closed with the object.
class BlackholeListener {
 public:
  BlackholeListener();
  ~BlackholeListener();
  BlackholeListener(const BlackholeListener&) = delete;
  BlackholeListener& operator=(const BlackholeListener&) = delete;
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::vector<int> fillers_;  // connections that fill the queue; never accepted
};

}  // namespace ferry::testing
