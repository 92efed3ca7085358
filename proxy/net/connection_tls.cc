// The TLS half of Connection (connection.h): connectTls() and fromAcceptedTls(), the
// non-blocking handshake (either side), and the read and write paths that go through a
// tls::Session instead of readv/writev. The plain paths in connection.cc hand over here with
// one pointer test per callback.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>

#include "proxy/net/connection.h"
#include "proxy/tls/client_session.h"
#include "proxy/tls/server_session.h"

namespace ferry::net {

namespace {
// Plaintext read per readable event before the consumer runs (plain reads take 16 KiB; TLS
// takes a few records, since a record must be read whole anyway).
constexpr size_t kTlsReadBudget = 64 * 1024;

// A TLS connection starts with a handshake record (RFC 8446 section 5.1: ContentType
// handshake(22)); a plain-HTTP request starts with a method token (RFC 9112 section 3).
constexpr unsigned char kTlsHandshakeRecord = 0x16;

bool isTokenChar(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

// What a plain-HTTP client sent to the TLS port gets, in cleartext, like nginx does
// ("The plain HTTP request was sent to HTTPS port"), then the connection closes.
constexpr char kPlainHttpOnTlsPort[] =
    "HTTP/1.1 400 Bad Request\r\n"
    "content-type: application/json\r\n"
    "content-length: 85\r\n"
    "connection: close\r\n\r\n"
    "{\"error\":{\"code\":\"tls_required\",\"message\":\"this port speaks TLS: use an https "
    "URL\"}}\n";
}  // namespace

std::unique_ptr<Connection> Connection::fromAcceptedTls(event::Dispatcher& dispatcher, int fd,
                                                        tls::ServerContext& context,
                                                        event::Millis handshake_timeout,
                                                        DownstreamTlsObserver* observer) {
  // Already non-blocking: the listener accepts with accept4(SOCK_NONBLOCK) (libevent's
  // evconnlistener without LEV_OPT_LEAVE_SOCKETS_BLOCKING), so no fcntl per handshake here.
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  auto conn = std::unique_ptr<Connection>(new Connection(dispatcher, fd, State::Connecting));
  conn->tls_observer_ = observer;
  conn->tls_server_ = true;
  conn->sniff_pending_ = true;
  conn->tls_ = tls::ServerSession::create(context, fd);
  auto* raw = conn.get();
  if (conn->tls_ == nullptr) {
    conn->failure_timer_ = dispatcher.createTimer([raw] { raw->onHandshakeFailed("other"); });
    conn->failure_timer_->fireSoon();
    return conn;
  }
  conn->tls_handshaking_ = true;
  // The client speaks first (ClientHello).
  event_add(conn->read_event_, nullptr);
  conn->handshake_timer_ = dispatcher.createTimer([raw] {
    raw->tls_error_ = "TLS handshake timed out";
    raw->onHandshakeFailed("timeout");
  });
  conn->handshake_timer_->enable(handshake_timeout);
  return conn;
}

const std::string& Connection::tlsPeerIdentity() const {
  static const std::string kNone;
  return tls_ != nullptr ? tls_->peerIdentity() : kNone;
}

void Connection::onHandshakeFailed(const std::string& reason) {
  tls_handshaking_ = false;
  tls_handshake_failed_ = true;
  if (tls_error_.empty() && tls_ != nullptr) tls_error_ = tls_->error();
  if (tls_observer_ != nullptr) tls_observer_->onTlsHandshakeFailed(reason);
  // The client never got to send a request: nothing to answer, just close. (RemoteClose, not
  // ConnectFailed: the connection manager above treats this as any client that left.)
  closeNow(ConnectionEvent::RemoteClose);
}

bool Connection::checkTlsRecordFirst() {
  unsigned char first = 0;
  const ssize_t got = ::recv(fd_, &first, 1, MSG_PEEK);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  if (got <= 0) {
    tls_error_ = "closed before the TLS handshake";
    onHandshakeFailed("closed");
    return false;
  }
  sniff_pending_ = false;
  if (first == kTlsHandshakeRecord) return true;
  if (!isTokenChar(first)) {
    tls_error_ = "not a TLS handshake";
    onHandshakeFailed("not_tls");
    return false;
  }
  // Plain HTTP. Read what the client sent (a close with unread bytes would reset the
  // connection and could destroy the answer in flight, RFC 9112 section 9.6), answer, close.
  char discard[4096];
  for (int i = 0; i < 16 && ::recv(fd_, discard, sizeof(discard), 0) > 0; ++i) {
  }
  if (tls_observer_ != nullptr) tls_observer_->onPlainHttpOnTlsPort();
  const ssize_t sent = ::send(fd_, kPlainHttpOnTlsPort, sizeof(kPlainHttpOnTlsPort) - 1,
                              MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)sent;  // best-effort: a fresh socket's buffer holds it
  ::shutdown(fd_, SHUT_WR);
  tls_handshaking_ = false;
  tls_handshake_failed_ = true;
  tls_error_ = "plain HTTP on the TLS port";
  tls_.reset();  // nothing to shut down: no handshake happened
  closeNow(ConnectionEvent::RemoteClose);
  return false;
}

bool Connection::checkNotTls() {
  sniff_pending_ = false;
  unsigned char first = 0;
  if (evbuffer_copyout(input_.raw(), &first, 1) != 1 || first != kTlsHandshakeRecord) return true;
  // A TLS client on the plain port: an HTTP answer would only confuse it; close.
  tls_observer_->onTlsOnPlainPort();
  closeNow(ConnectionEvent::RemoteClose);
  return false;
}

std::unique_ptr<Connection> Connection::connectTls(event::Dispatcher& dispatcher,
                                                   const std::string& host, uint16_t port,
                                                   tls::ClientContext& context,
                                                   const std::string& server_name,
                                                   const std::vector<std::string>& alpn) {
  auto conn = connect(dispatcher, host, port);
  if (conn->fd_ < 0 || conn->failure_timer_ != nullptr) return conn;  // fails as plain does
  conn->tls_ = tls::ClientSession::create(
      context, conn->fd_, server_name, server_name + "|" + host + ":" + std::to_string(port), alpn);
  if (conn->tls_ == nullptr) {
    conn->tls_handshake_failed_ = true;
    conn->tls_error_ = "cannot start a TLS session for \"" + server_name + "\"";
    event_del(conn->write_event_);
    auto* raw = conn.get();
    conn->failure_timer_ =
        dispatcher.createTimer([raw] { raw->closeNow(ConnectionEvent::ConnectFailed); });
    conn->failure_timer_->fireSoon();
  }
  return conn;
}

std::string_view Connection::tlsAlpn() const {
  return tls_ != nullptr ? tls_->alpn() : std::string_view();
}

bool Connection::tlsResumed() const { return tls_ != nullptr && tls_->resumed(); }

void Connection::continueHandshake() {
  if (sniff_pending_ && (!checkTlsRecordFirst() || sniff_pending_)) return;
  switch (tls_->handshake()) {
    case tls::IoState::Done:
      tls_handshaking_ = false;
      if (tls_server_) {
        handshake_timer_->disable();
        tls_established_ = tls_observer_ != nullptr;
        if (tls_observer_ != nullptr) tls_observer_->onTlsHandshake(*this);
      }
      // The handshake's last step waited on one of the two events. A read event left
      // registered stays so (without libevent's changelist, removing and re-adding it would
      // cost two epoll_ctl calls per handshake); reading_ says so to updateReadInterest().
      event_del(write_event_);
      state_ = State::Open;
      reading_ = event_pending(read_event_, EV_READ, nullptr) != 0;
      updateReadInterest();
      // The client's first request often comes with its Finished: OpenSSL may hold it already.
      if (reading_ && tls_->hasPending()) event_active(read_event_, EV_READ, 0);
      if (callbacks_ != nullptr) callbacks_->onEvent(ConnectionEvent::Connected);
      if (state_ == State::Open && !output_.empty()) doWrite();
      return;
    case tls::IoState::WantRead:
      event_del(write_event_);
      event_add(read_event_, nullptr);
      return;
    case tls::IoState::WantWrite:
      event_del(read_event_);
      event_add(write_event_, nullptr);
      return;
    default:
      if (tls_server_) {
        onHandshakeFailed(tls_->failureReason());
        return;
      }
      // Bad certificate, wrong name, a peer that is not speaking TLS, a reset: nothing of the
      // request was sent, so this is a failed connect (the forward keeps the local 409).
      tls_handshaking_ = false;
      tls_handshake_failed_ = true;
      tls_error_ = tls_->error();
      closeNow(ConnectionEvent::ConnectFailed);
      return;
  }
}

void Connection::doTlsRead() {
  tls::IoResult result = tls_->read(input_.raw(), kTlsReadBudget);
  if (result.bytes > 0 && callbacks_ != nullptr) {
    dispatcher_.enterReadCallback();
    callbacks_->onData(input_);
    dispatcher_.leaveReadCallback();  // writes what onData produced, on every connection
  }
  if (state_ == State::Closed) return;
  switch (result.state) {
    case tls::IoState::Closed:  // close_notify: a clean end
      closeNow(ConnectionEvent::RemoteClose);
      return;
    case tls::IoState::Error:  // reset, alert, or EOF without close_notify: truncated
      tls_truncated_ = true;
      tls_handshake_failed_ = tls_->handshakeRejected();
      tls_error_ = tls_->error();
      closeNow(ConnectionEvent::RemoteClose);
      return;
    case tls::IoState::WantWrite:
      // OpenSSL must send something before it can read on (e.g. a KeyUpdate reply): wait for
      // EPOLLOUT, then doTlsWrite() reads again.
      tls_read_wants_write_ = true;
      event_del(read_event_);
      reading_ = false;
      event_add(write_event_, nullptr);
      return;
    default:
      break;
  }
  updateReadInterest();  // stop at the read limit until the consumer catches up
  // The budget ran out, or OpenSSL holds decrypted bytes: the socket may never signal them.
  if (reading_ && (result.state == tls::IoState::Again || tls_->hasPending())) {
    event_active(read_event_, EV_READ, 0);
  }
}

void Connection::doTlsWrite() {
  if (tls_read_wants_write_) {
    tls_read_wants_write_ = false;
    if (!write_pending_) event_del(write_event_);
    updateReadInterest();
    if (reading_) event_active(read_event_, EV_READ, 0);
  }
  tls::IoResult result = tls_->write(output_.raw());
  if (result.state == tls::IoState::Error) {
    tls_error_ = tls_->error();
    closeAfterWriteError();
    return;
  }
  // Output left means WantWrite: the socket is full. (WantRead would need renegotiation, which
  // the context disables; waiting for EPOLLOUT retries it too.)
  afterWrite();
}

}  // namespace ferry::net
