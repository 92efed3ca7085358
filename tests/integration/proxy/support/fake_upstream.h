#pragma once
// A scriptable fake upstream (in the spirit of Envoy's FakeUpstream): a listening socket on
// 127.0.0.1:0 whose connections the test drives step by step (read the head, answer chosen
// bytes, pause, close, reset, read slowly). Accepted connections are owned here; a test that
// needs the upstream to act concurrently with its client runs the script on a TestThread.

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "tests/integration/proxy/support/http_message.h"
#include "tests/integration/proxy/support/socket.h"

namespace ferry::itest {

class FakeUpstream {
 public:
  FakeUpstream();
  ~FakeUpstream();
  uint16_t port() const { return port_; }

  // Waits for a new connection (nullptr on timeout). Owned by the FakeUpstream.
  Socket* waitForConnection(Deadline deadline = defaultDeadline());
  // Waits for the next complete request on any connection, new or already accepted (ferry may
  // reuse a pooled connection or open a new one). Returns the connection it came on.
  struct Request {
    Socket* connection = nullptr;
    HttpMessage message;
  };
  std::optional<Request> waitForRequest(Deadline deadline = defaultDeadline());
  // Connections accepted so far.
  size_t connectionCount() const { return connections_.size(); }
  // Stops listening (later connects are refused) and closes every connection.
  void close();

 private:
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::vector<std::unique_ptr<Socket>> connections_;
};

// A port on 127.0.0.1 that nothing listens on (bound to port 0, then closed).
uint16_t unusedPort();

// Runs `body` on a thread, joined when the object goes out of scope.
class TestThread {
 public:
  explicit TestThread(std::function<void()> body) : thread_(std::move(body)) {}
  ~TestThread() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

}  // namespace ferry::itest
