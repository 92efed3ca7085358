#pragma once
// The byte pipe under a test client: a blocking TCP connection to 127.0.0.1, optionally TLS
// (verified like HttpClient's: ClientTls names the CA, the expected name and the client
// certificate), with deadlines on every wait. It knows nothing of HTTP: Http2Client frames its
// bytes with nghttp2 on top of it.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "integration/harness/http_client.h"
#include "proxy/common/status.h"

struct ssl_st;
struct ssl_ctx_st;

namespace ferry::testing {

class ClientTransport {
 public:
  using Clock = std::chrono::steady_clock;

  ClientTransport() = default;
  ~ClientTransport() { close(); }
  ClientTransport(const ClientTransport&) = delete;
  ClientTransport& operator=(const ClientTransport&) = delete;

  // Connects to 127.0.0.1:`port`; with `tls`, completes a verified handshake offering `alpn`
  // (wire format: length-prefixed protocol names, e.g. "\x02h2").
  Status connect(uint16_t port, const ClientTls* tls, std::string_view alpn,
                 Clock::time_point deadline);
  void close();
  bool connected() const { return fd_ >= 0; }
  bool usesTls() const { return ssl_ != nullptr; }
  // The protocol the server selected by ALPN ("" for plain TCP or none).
  std::string alpnSelected() const;

  // Writes all of `bytes`, or an error (the peer reset the connection, the deadline passed).
  Status writeAll(std::string_view bytes, Clock::time_point deadline);

  enum class Read { kData, kTimeout, kEnd };
  // Waits until bytes are readable and appends what one read returns to `out`. kEnd: the peer
  // closed (FIN or close_notify) or reset the connection (see wasReset()), or TLS failed.
  Read readSome(std::string& out, Clock::time_point deadline);
  bool wasReset() const { return reset_; }

 private:
  ssl_ctx_st* ssl_ctx_ = nullptr;
  ssl_st* ssl_ = nullptr;
  int fd_ = -1;
  bool reset_ = false;
};

}  // namespace ferry::testing
