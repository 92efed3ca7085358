// The TLS half of Connection (connection.h): connectTls(), the non-blocking handshake, and the
// read and write paths that go through a tls::ClientSession instead of readv/writev. The plain
// paths in connection.cc hand over here with one pointer test per callback.

#include "proxy/net/connection.h"
#include "proxy/tls/client_session.h"

namespace ferry::net {

namespace {
// Plaintext read per readable event before the consumer runs (plain reads take 16 KiB; TLS
// takes a few records, since a record must be read whole anyway).
constexpr size_t kTlsReadBudget = 64 * 1024;
}  // namespace

std::unique_ptr<Connection> Connection::connectTls(event::Dispatcher& dispatcher,
                                                   const std::string& host, uint16_t port,
                                                   tls::ClientContext& context,
                                                   const std::string& server_name) {
  auto conn = connect(dispatcher, host, port);
  if (conn->fd_ < 0 || conn->failure_timer_ != nullptr) return conn;  // fails as plain does
  conn->tls_ = tls::ClientSession::create(context, conn->fd_, server_name,
                                          server_name + "|" + host + ":" + std::to_string(port));
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

bool Connection::tlsResumed() const { return tls_ != nullptr && tls_->resumed(); }

void Connection::continueHandshake() {
  switch (tls_->handshake()) {
    case tls::IoState::Done:
      tls_handshaking_ = false;
      event_del(read_event_);
      event_del(write_event_);
      state_ = State::Open;
      updateReadInterest();
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
    closeNow(state_ == State::Flushing ? ConnectionEvent::LocalClose
                                       : ConnectionEvent::RemoteClose);
    return;
  }
  // Output left means WantWrite: the socket is full. (WantRead would need renegotiation, which
  // the context disables; waiting for EPOLLOUT retries it too.)
  afterWrite();
}

}  // namespace ferry::net
