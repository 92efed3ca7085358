#pragma once
// A TCP connection (downstream or upstream) on a non-blocking socket with libevent events and
// evbuffers. The connection owns the socket; its owner (a connection manager, or an upstream
// pool's client) owns the Connection and reacts to its callbacks. Bytes read land in input()
// for a codec to consume; codecs append to output(), which is written out when the read
// callback that produced it returns (or at the end of the loop pass for output produced by a
// timer): one writev for everything a callback produced. It only waits for EPOLLOUT when the
// socket is full. Reads go straight into reserved evbuffer space (no
// FIONREAD). The bench profile showed bufferevent's arm-EPOLLOUT-then-write and FIONREAD
// costing 6 syscalls per proxied request.
// TLS plugs in behind the same callbacks: connectTls() gives an upstream connection a
// tls::ClientSession at connect time (https owners), fromAcceptedTls() gives an accepted one a
// tls::ServerSession (the TLS listener); the read and write paths hand over to it with one
// pointer test per callback; input() and output() carry plaintext either way.

#include <event2/event.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/buffer/buffer.h"
#include "proxy/event/dispatcher.h"

namespace ferry::tls {
class ClientContext;
class ServerContext;
class Session;
}  // namespace ferry::tls

namespace ferry::net {

enum class ConnectionEvent {
  Connected,      // an outbound connect() completed
  ConnectFailed,  // an outbound connect() was refused or failed, or its TLS handshake failed
  RemoteClose,    // the peer closed or reset the connection
  LocalClose,     // close() was called
};

// Implemented by the connection's owner. Called on the connection's dispatcher thread.
class ConnectionCallbacks {
 public:
  virtual ~ConnectionCallbacks() = default;
  // New bytes are in `input`; consume (drain) what can be used now, leave the rest.
  virtual void onData(Buffer& input) = 0;
  virtual void onEvent(ConnectionEvent event) = 0;
  // The output buffer rose above the high watermark / fell back below the low watermark
  // (low = high / 2): pause / resume whatever feeds this connection.
  virtual void onAboveWriteBufferHighWatermark() {}
  virtual void onBelowWriteBufferLowWatermark() {}
};

enum class CloseMode { FlushWrite, NoFlush, Reset };

class Connection;

// What happens to TLS on accepted connections, for the listener's stats. Implemented by the
// worker (one per worker, outliving its connections); called on the connection's thread.
class DownstreamTlsObserver {
 public:
  virtual ~DownstreamTlsObserver() = default;
  // A server handshake completed (conn.tlsResumed() says whether it resumed a session).
  virtual void onTlsHandshake(const Connection& conn) = 0;
  // A server handshake failed: `reason` is a short label ("timeout", "not_tls", "closed", ...).
  virtual void onTlsHandshakeFailed(std::string_view reason) = 0;
  // A connection whose handshake had completed closed.
  virtual void onTlsConnectionClosed() = 0;
  // A TLS ClientHello arrived on a plain listener (closed without an answer).
  virtual void onTlsOnPlainPort() = 0;
  // A plain-HTTP request arrived on a TLS listener (answered 400 in cleartext, closed).
  virtual void onPlainHttpOnTlsPort() = 0;
};

// final: Flushable's and GrowthWatcher's destructors are protected and non-virtual, and
// connections are deleted through unique_ptr<Connection>.
class Connection final : public event::Flushable,
                         public event::BatchedWriter,
                         public Buffer::GrowthWatcher {
 public:
  // Takes ownership of an accepted socket. With an observer, a TLS ClientHello as the first
  // bytes is reported to it and the connection closed (plain listener, TLS client).
  static std::unique_ptr<Connection> fromAccepted(event::Dispatcher& dispatcher, int fd,
                                                  DownstreamTlsObserver* observer = nullptr);
  // Takes ownership of a socket accepted on a TLS listener and starts the server handshake.
  // Bytes reach the callbacks only once it completed (Connected is raised then); a handshake
  // that fails, or does not complete within `handshake_timeout`, raises RemoteClose with
  // tlsHandshakeFailed() true. A plain-HTTP request instead of a ClientHello is answered 400
  // in cleartext and closed. `observer` (may be null) sees every outcome.
  static std::unique_ptr<Connection> fromAcceptedTls(event::Dispatcher& dispatcher, int fd,
                                                     tls::ServerContext& context,
                                                     event::Millis handshake_timeout,
                                                     DownstreamTlsObserver* observer);
  // Starts connecting to host:port (numeric IPv4/IPv6); the result arrives as an event.
  static std::unique_ptr<Connection> connect(event::Dispatcher& dispatcher, const std::string& host,
                                             uint16_t port);
  // As connect(), then a client TLS handshake on the socket: SNI and the certificate check use
  // `server_name` (the URL's host). Connected is raised only when the handshake completed; a
  // failed one raises ConnectFailed with tlsHandshakeFailed() true. `alpn` lists the
  // protocols offered by ALPN, in preference order ({"h2", "http/1.1"}); empty: no ALPN.
  static std::unique_ptr<Connection> connectTls(event::Dispatcher& dispatcher,
                                                const std::string& host, uint16_t port,
                                                tls::ClientContext& context,
                                                const std::string& server_name,
                                                const std::vector<std::string>& alpn = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void setCallbacks(ConnectionCallbacks& callbacks) { callbacks_ = &callbacks; }
  void setWriteWatermark(size_t high_bytes);
  // Bounds how much is read ahead into input() while nobody consumes it.
  void setReadLimit(size_t bytes);
  // Output is written once per event-loop pass instead of once per read callback: for a
  // connection fed by many others (HTTP/2: each stream's upstream has its own socket), the
  // answers that arrive in one pass leave in one writev instead of one each.
  void setWriteBatching(bool batch) { batch_writes_ = batch; }
  Buffer& input() { return input_; }
  Buffer& output() { return output_; }
  // Stops / restarts reading from the socket. Calls nest: each disable needs an enable.
  void readDisable(bool disable);
  bool readEnabled() const { return read_disable_count_ == 0; }
  // FlushWrite closes once the output is written; NoFlush drops it; Reset sends a TCP RST.
  // Raises LocalClose (once) before returning for NoFlush/Reset, after the flush otherwise.
  void close(CloseMode mode);
  bool open() const { return state_ == State::Open || state_ == State::Connecting; }
  bool aboveHighWatermark() const { return above_high_; }
  uint64_t id() const { return id_; }
  // TLS only. The handshake failed (bad certificate, wrong name, not TLS, reset), or the peer
  // refused it with an alert before sending any data (TLS 1.3: after Connected, e.g. a client
  // certificate it does not accept; then RemoteClose follows). tlsError() says why.
  bool tlsHandshakeFailed() const { return tls_handshake_failed_; }
  // TLS only. The stream ended without close_notify (or broke): a response delimited by the
  // close may be incomplete and must not be taken as whole.
  bool tlsTruncated() const { return tls_truncated_; }
  // The TLS handshake resumed a cached session (false on plain connections).
  bool tlsResumed() const;
  const std::string& tlsError() const { return tls_error_; }
  // Server TLS with a verified client certificate: its subject and names; else empty.
  const std::string& tlsPeerIdentity() const;
  // The peer's address, "ip:port" or "[ip6]:port" (getpeername; empty once the socket is gone
  // or when it cannot be told). One system call: callers keep the answer.
  std::string peerAddress() const;
  // The connection carries TLS (a server or client session).
  bool tls() const { return tls_ != nullptr; }
  // The ALPN protocol the TLS handshake chose ("h2", "http/1.1"); empty without TLS or ALPN.
  std::string_view tlsAlpn() const;

 private:
  enum class State { Connecting, Open, Flushing, Closed };
  Connection(event::Dispatcher& dispatcher, int fd, State state);
  static void onReadable(evutil_socket_t, short, void* arg);
  static void onWritable(evutil_socket_t, short, void* arg);
  static void onFlush(evutil_socket_t, short, void* arg);
  void flushNow() override;  // the queued flush, at the end of a read callback
  // Bytes were added to output_: queues their write, checks the high watermark.
  void onBufferGrew() override;
  static void onInputChanged(evbuffer*, const evbuffer_cb_info* info, void* arg);
  // Registers onInputChanged while `watch` (reading stopped at the read limit), else removes it.
  void watchInputDrain(bool watch);
  void doRead();
  // One read() from the socket into input_; returns what read() returned, or kNoReadSpace.
  ssize_t readViaStack();
  ssize_t readIntoInput();
  // Writes what output() holds: with the dispatcher's write batch when it has one (plain
  // sockets), else at once; waits for EPOLLOUT only when the socket would block.
  void doWrite();
  // write() until output() is empty or the socket would block, then afterWrite().
  void writeNow();
  // event::BatchedWriter: the batch's write of output(), at the end of the loop pass.
  int prepareBatchedWrite(iovec* iov, int max) override;
  void onBatchedWrite(int result) override;
  int batchedWriteFd() const override { return fd_; }
  // After a write: tells the callbacks when output fell below the low watermark, waits for
  // EPOLLOUT while output is left, else stops waiting (and finishes a flushing close).
  void afterWrite();
  // A write failed: closes (LocalClose while flushing a close of ours, else RemoteClose).
  void closeAfterWriteError();
  void onConnectResult();
  void updateReadInterest();
  void closeNow(ConnectionEvent event);
  // TLS paths (connection_tls.cc).
  void continueHandshake();
  // Server side, before the first handshake step: a peek at the first byte tells a TLS record
  // (0x16, handshake) from a plain-HTTP request. False when the connection was closed.
  bool checkTlsRecordFirst();
  void onHandshakeFailed(const std::string& reason);
  // Plain listener: the first bytes read were a TLS record. False when the connection was closed.
  bool checkNotTls();
  void doTlsRead();
  void doTlsWrite();

  event::Dispatcher& dispatcher_;
  int fd_;
  ::event* read_event_;
  ::event* write_event_;
  ::event* flush_event_;       // output gained bytes outside a read callback: write later this pass
  bool flush_queued_ = false;  // a flush is queued with the dispatcher or flush_event_ is active
  bool batch_writes_ = false;  // setWriteBatching
  bool batch_queued_ = false;  // queued with the dispatcher's write batch
  size_t batch_offered_ = 0;   // bytes prepareBatchedWrite() handed to the batch
  bool write_pending_ = false;
  bool reading_ = false;
  size_t read_limit_ = 0;
  evbuffer_cb_entry* input_watch_ = nullptr;  // onInputChanged, while registered
  bool large_reads_ = false;                  // the last read filled more than half a read chunk
  Buffer input_;
  Buffer output_;
  ConnectionCallbacks* callbacks_ = nullptr;
  State state_;
  uint64_t id_;
  size_t high_watermark_ = 0;
  bool above_high_ = false;
  int read_disable_count_ = 0;
  event::TimerPtr failure_timer_;      // reports a connect() that failed synchronously
  std::unique_ptr<tls::Session> tls_;  // null on plain connections
  bool tls_handshaking_ = false;       // TCP connected, TLS handshake in progress
  bool tls_read_wants_write_ = false;  // SSL_read must wait for EPOLLOUT (post-handshake writes)
  bool tls_handshake_failed_ = false;
  bool tls_truncated_ = false;
  std::string tls_error_;
  // Accepted connections only.
  DownstreamTlsObserver* tls_observer_ = nullptr;
  bool tls_server_ = false;       // tls_ is a server session
  bool tls_established_ = false;  // server handshake completed (counted as active)
  bool sniff_pending_ = false;    // the first bytes have not been looked at yet
  event::TimerPtr handshake_timer_;
};
using ConnectionPtr = std::unique_ptr<Connection>;

}  // namespace ferry::net
