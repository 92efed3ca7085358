#pragma once
// A scripted HTTPS owner for TLS failure tests: an OpenSSL server on 127.0.0.1 port 0, in its
// own thread, that does one scripted thing per connection (connections are served one at a
// time). It answers a request with exactly the bytes it was given (one SSL_write per
// `record_size` bytes, so a test chooses the record layout), then ends with a bare TCP close
// (no close_notify: a truncated stream), a close_notify, or keeps the connection open; or it
// resets the connection once the request arrived; or it refuses the handshake with an alert.
// It counts handshakes and the ones that resumed a session.
//
//   ScriptedTlsOwner owner(cert_file, key_file, {.response = "HTTP/1.1 200 OK\r\n\r\nhalf"});
//   ... point ferry at https://127.0.0.1:<owner.port()> ...

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace ferry::testing {

struct TlsOwnerScript {
  enum class Action {
    Respond,            // read one request (head + Content-Length body), send `response`
    ResetAfterRequest,  // read one request, then reset the TCP connection (no response byte)
    HandshakeAlert,     // refuse the ClientHello with a handshake_failure alert
  };
  enum class End { TcpClose, CloseNotify, KeepOpen };
  Action action = Action::Respond;
  std::string response = {};
  size_t record_size = 16 * 1024;  // bytes per SSL_write (one record each)
  End end = End::TcpClose;         // after the response
};

class ScriptedTlsOwner {
 public:
  ScriptedTlsOwner(const std::string& cert_file, const std::string& key_file,
                   TlsOwnerScript script);
  ~ScriptedTlsOwner();
  ScriptedTlsOwner(const ScriptedTlsOwner&) = delete;
  ScriptedTlsOwner& operator=(const ScriptedTlsOwner&) = delete;

  uint16_t port() const { return port_; }
  int handshakes() const { return handshakes_.load(); }       // completed
  int resumedHandshakes() const { return resumed_.load(); }   // SSL_session_reused
  int requests() const { return requests_.load(); }           // whole requests read
  int responsesWritten() const { return responses_.load(); }  // every response byte written

 private:
  void run();
  void serve(int fd);
  bool waitReadable(int fd, int timeout_ms) const;

  TlsOwnerScript script_;
  void* ctx_ = nullptr;  // SSL_CTX*
  int listen_fd_ = -1;
  int wake_fd_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::atomic<int> handshakes_{0};
  std::atomic<int> resumed_{0};
  std::atomic<int> requests_{0};
  std::atomic<int> responses_{0};
  std::thread thread_;
};

}  // namespace ferry::testing
