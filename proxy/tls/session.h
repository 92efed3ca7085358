#pragma once
// One TLS session on a connected, non-blocking socket, either side: the state machine between
// a net::Connection and OpenSSL. It never waits and never touches event registrations: each
// call does what the socket allows now and says what it waits for (WantRead / WantWrite), and
// the connection arms its libevent events accordingly. Plaintext moves between the session and
// the connection's evbuffers (reads land in reserved space, writes drain what was sent).
//
// Life: made by ClientSession::create() (client_session.h, upstream connections to https
// owners) or ServerSession::create() (server_session.h, connections accepted on a TLS
// listener); handshake() until Done (or Error), then read()/write() as the socket is ready,
// then shutdown() (close_notify, best-effort) before the socket is closed. The socket stays
// owned by the caller.

#include <event2/buffer.h>
#include <openssl/ssl.h>

#include <cstddef>
#include <string>
#include <string_view>

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

class Session {
 public:
  virtual ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Drives the handshake (SSL_connect or SSL_accept, as the session was made): Done, WantRead,
  // WantWrite or Error (see error()).
  virtual IoState handshake();
  // Decrypts up to about `budget` bytes into `input`. `bytes` says how many arrived, `state`
  // why it stopped: Again (budget reached), WantRead (OpenSSL holds nothing more: wait for
  // the socket), WantWrite, Closed, Error.
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
  // The negotiated ALPN protocol ("" when none was).
  std::string_view alpn() const {
    const unsigned char* data = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(ssl_, &data, &length);
    return {reinterpret_cast<const char*>(data), length};
  }
  // The last failure was the peer refusing the handshake with an alert (bad or missing client
  // certificate, unknown CA, ...) before any application byte arrived. TLS 1.3 completes the
  // client's handshake before the server checked the client's certificate (RFC 8446 section
  // 4.4.2.4), so that refusal arrives on the first read; the peer processed nothing.
  bool handshakeRejected() const { return handshake_rejected_; }
  // The verified identity of the peer's certificate (server side with client certificates);
  // empty when there is none.
  virtual const std::string& peerIdentity() const;
  // Why the handshake failed, as a short stats label: "closed" (EOF or reset), "version",
  // "alpn", "no_client_cert", "bad_client_cert", "peer_alert" (the peer refused our
  // certificate or settings with an alert), "other".
  std::string failureReason() const;

 protected:
  explicit Session(SSL* ssl) : ssl_(ssl) {}
  // Maps a failed SSL_* call's result to WantRead / WantWrite / Closed / Error.
  IoState onFailure(int rc, const char* what);
  SSL* ssl_;
  std::string error_;
  int ssl_error_ = 0;             // SSL_get_error() of the last failure
  unsigned long error_code_ = 0;  // the first queued OpenSSL error of the last failure

 private:
  bool failed_ = false;
  bool shut_down_ = false;
  bool read_any_ = false;
  bool handshake_rejected_ = false;
  bool large_reads_ = false;  // the last record filled over half a read: read in place
};

}  // namespace ferry::tls
