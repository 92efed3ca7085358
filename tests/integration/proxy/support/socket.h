#pragma once
// A blocking-with-deadline TCP socket for integration tests: the client side of a test and each
// connection a FakeUpstream accepts. Every wait takes a deadline, so a test that breaks fails
// with a timeout instead of hanging. Reads land in buffered(), which parsers consume.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::itest {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;
inline Deadline deadlineIn(std::chrono::milliseconds d) { return Clock::now() + d; }
inline Deadline defaultDeadline() { return deadlineIn(std::chrono::seconds(10)); }

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd);
  ~Socket();
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Connects to 127.0.0.1:port. Invalid socket on failure; errno-style code in *error.
  static Socket connectTo(uint16_t port, int* error = nullptr);

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Writes all of `bytes`; false when the peer is gone or the deadline passed.
  bool sendAll(std::string_view bytes, Deadline deadline = defaultDeadline());
  // Reads once (waiting for at least one byte) into buffered(). False on EOF, reset or timeout.
  bool readMore(Deadline deadline, size_t max = 256 * 1024);
  // Consumes up to and including `delim` from the stream.
  std::optional<std::string> readUntil(std::string_view delim, Deadline deadline);
  std::optional<std::string> readExactly(size_t n, Deadline deadline);
  // Reads until EOF/reset; returns everything not consumed yet (nullopt on timeout).
  std::optional<std::string> readToEof(Deadline deadline);
  // True when the peer closed or reset by the deadline (bytes read meanwhile stay buffered).
  bool waitForClose(Deadline deadline);
  // Waits up to `window` for a byte; true if any byte (or EOF) arrived. For "nothing came".
  bool anythingWithin(std::chrono::milliseconds window);
  void shutdownWrite();
  // Closes with a TCP RST (SO_LINGER 0).
  void resetClose();
  void close();
  void setReceiveBuffer(int bytes);

  std::string& buffered() { return buffered_; }
  bool eof() const { return eof_; }
  bool reset() const { return reset_; }

 private:
  int fd_ = -1;
  std::string buffered_;
  bool eof_ = false;
  bool reset_ = false;
};

}  // namespace ferry::itest
