#pragma once
// The socket and TLS steps both blocking test clients share (HttpClient over HTTP/1.1,
// ClientTransport under Http2Client): a non-blocking TCP connect to 127.0.0.1 with a
// deadline, a verified client TLS handshake (ClientTls: the CA, the expected name, the client
// certificate) offering a given ALPN list, and a write that sends everything or fails.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "integration/harness/http_client.h"
#include "proxy/common/status.h"

struct ssl_st;
struct ssl_ctx_st;

namespace ferry::testing::client_socket {

using Clock = std::chrono::steady_clock;

// Milliseconds left until `deadline` (0 once it passed), for poll().
int msLeft(Clock::time_point deadline);
// Waits for `events` on `fd`; false at the deadline.
bool waitFor(int fd, short events, Clock::time_point deadline);
// OpenSSL's error queue as text (emptied).
std::string sslErrors();

// A connected non-blocking TCP socket to 127.0.0.1:`port` (TCP_NODELAY), or why not.
StatusOr<int> connectLoopback(uint16_t port, Clock::time_point deadline);

// One client TLS session on a socket. Freed without close_notify: tests close like a client
// that left.
struct TlsSession {
  ssl_ctx_st* ctx = nullptr;
  ssl_st* ssl = nullptr;
  void free();
};
// Completes a verified handshake on connected `fd`, offering `alpn` (wire format:
// length-prefixed names, e.g. "\x02h2"; empty: no ALPN). On failure `session` holds what was
// made (free() it).
Status startTls(int fd, const ClientTls& tls, std::string_view alpn, Clock::time_point deadline,
                TlsSession& session);

// Writes all of `bytes` to `fd`, through `ssl` when not null. `*reset` turns true when the
// peer reset the connection.
Status writeAll(int fd, ssl_st* ssl, std::string_view bytes, Clock::time_point deadline,
                bool* reset);

}  // namespace ferry::testing::client_socket
