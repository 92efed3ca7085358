#pragma once
// One client-side TLS session on a connected, non-blocking socket: the state machine between
// a net::Connection and OpenSSL. It never waits and never touches event registrations: each
// call does what the socket allows now and says what it waits for (WantRead / WantWrite), and
// the connection arms its libevent events accordingly. Plaintext moves between the session and
// the connection's evbuffers (reads land in reserved space, writes drain what was sent).
//
// Life: create() after connect() succeeded, handshake() until Done (or Error: the connection
// reports a failed connect, the owner saw nothing), then read()/write() as the socket is ready,
// then shutdown() (close_notify, best-effort) before the socket is closed. The socket stays
// owned by the caller.

#include <event2/buffer.h>
#include <openssl/ssl.h>

#include <cstddef>
#include <memory>
#include <string>

#include "proxy/tls/client_context.h"

namespace ferry::tls {

enum class IoState {
  Done,       // handshake complete / everything asked was done
  Again,      // read: stopped at the budget; more may be ready now
  WantRead,   // retry when the socket is readable
  WantWrite,  // retry when the socket is writable
  Closed,     // read: the peer sent close_notify (a clean end of the stream)
  Error,      // fatal: handshake failure, alert, reset, or EOF without close_notify
};

struct IoResult {
  size_t bytes = 0;
  IoState state = IoState::Done;
};

class ClientSession {
 public:
  // `server_name` is the URL's host: sent as SNI when it is a name, and checked against the
  // certificate (DNS name, or IP address for literals) when the context verifies. `cache_key`
  // names the target for session resumption. nullptr when OpenSSL can't make a session.
  static std::unique_ptr<ClientSession> create(ClientContext& context, int fd,
                                               const std::string& server_name,
                                               std::string cache_key);
  ~ClientSession();
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  // Drives SSL_connect: Done, WantRead, WantWrite or Error (see error()).
  IoState handshake();
  // Decrypts up to about `budget` bytes into `input`. `bytes` says how many arrived, `state`
  // why it stopped: Again (budget reached), WantRead (socket drained), WantWrite, Closed, Error.
  // A caller that stops reading while hasPending() must come back without waiting for the
  // socket: OpenSSL may hold decrypted bytes the socket will never signal again.
  IoResult read(evbuffer* input, size_t budget);
  // Encrypts and sends from the front of `output`, draining what was sent: Done (output empty),
  // WantWrite, WantRead or Error.
  IoResult write(evbuffer* output);
  bool hasPending() const { return SSL_has_pending(ssl_) == 1; }
  // Sends close_notify once, best-effort (never waits).
  void shutdown();
  // Why the last call failed (OpenSSL's reason, with the certificate check's when it failed).
  const std::string& error() const { return error_; }
  bool resumed() const { return SSL_session_reused(ssl_) == 1; }
  // The last failure was the peer refusing the handshake with an alert (bad or missing client
  // certificate, unknown CA, ...) before any application byte arrived. TLS 1.3 completes the
  // client's handshake before the server checked the client's certificate (RFC 8446 section
  // 4.4.2.4), so that refusal arrives on the first read; the peer processed nothing.
  bool handshakeRejected() const { return handshake_rejected_; }

 private:
  ClientSession(ClientContext& context, SSL* ssl, std::string cache_key)
      : context_(context.shared_from_this()), ssl_(ssl), cache_key_(std::move(cache_key)) {}
  // Maps a failed SSL_* call's result to WantRead / WantWrite / Closed / Error.
  IoState onFailure(int rc, const char* what);

  // Held, not borrowed: a reload may swap the context while this session lives.
  const std::shared_ptr<ClientContext> context_;
  SSL* ssl_;
  const std::string cache_key_;
  std::string error_;
  bool failed_ = false;
  bool shut_down_ = false;
  bool read_any_ = false;
  bool handshake_rejected_ = false;
};

}  // namespace ferry::tls
