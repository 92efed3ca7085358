#include "proxy/net/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "proxy/net/listener.h"
#include "proxy/tls/client_session.h"

namespace ferry::net {

namespace {
std::atomic<uint64_t> next_connection_id{1};
constexpr size_t kReadChunk = 16 * 1024;
constexpr ssize_t kNoReadSpace = -2;  // the input buffer could not grow (allocation failed)

// Streamed responses must leave as soon as they arrive: no Nagle delay on any socket.
void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}
}  // namespace

std::string Connection::peerAddress() const {
  if (fd_ < 0) return {};
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return {};
  char host[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return {};
}

Connection::Connection(event::Dispatcher& dispatcher, int fd, State state)
    : dispatcher_(dispatcher), fd_(fd), state_(state), id_(next_connection_id++) {
  read_event_ =
      event_new(dispatcher.base(), fd, EV_READ | EV_PERSIST, &Connection::onReadable, this);
  write_event_ =
      event_new(dispatcher.base(), fd, EV_WRITE | EV_PERSIST, &Connection::onWritable, this);
  flush_event_ = event_new(dispatcher.base(), -1, 0, &Connection::onFlush, this);
  output_.watchGrowth(this);
  if (state_ == State::Open) updateReadInterest();
}

std::unique_ptr<Connection> Connection::fromAccepted(event::Dispatcher& dispatcher, int fd,
                                                     DownstreamTlsObserver* observer) {
  evutil_make_socket_nonblocking(fd);
  setNoDelay(fd);
  auto conn = std::unique_ptr<Connection>(new Connection(dispatcher, fd, State::Open));
  conn->tls_observer_ = observer;
  conn->sniff_pending_ = observer != nullptr;
  return conn;
}

std::unique_ptr<Connection> Connection::connect(event::Dispatcher& dispatcher,
                                                const std::string& host, uint16_t port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  bool numeric = toSockaddr(host, port, ss, len);
  int fd = numeric ? ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0) : -1;
  auto conn = std::unique_ptr<Connection>(new Connection(dispatcher, fd, State::Connecting));
  bool started = false;
  if (fd >= 0) {
    setNoDelay(fd);
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&ss), len);
    started = rc == 0 || errno == EINPROGRESS;
  }
  if (started) {
    // Writable = connected (or failed: SO_ERROR says which).
    event_add(conn->write_event_, nullptr);
  } else {
    // Reported on the next loop turn, so that callers always see the failure as an event.
    auto* raw = conn.get();
    conn->failure_timer_ =
        dispatcher.createTimer([raw] { raw->closeNow(ConnectionEvent::ConnectFailed); });
    conn->failure_timer_->fireSoon();
  }
  return conn;
}

Connection::~Connection() {
  if (flush_queued_) dispatcher_.cancelFlush(*this);
  if (batch_queued_) dispatcher_.cancelBatchedWrite(*this);
  watchInputDrain(false);
  event_free(read_event_);
  event_free(write_event_);
  event_free(flush_event_);
  if (fd_ >= 0) ::close(fd_);
}

void Connection::setWriteWatermark(size_t high_bytes) { high_watermark_ = high_bytes; }

void Connection::setReadLimit(size_t bytes) {
  read_limit_ = bytes;
  updateReadInterest();
}

void Connection::updateReadInterest() {
  const bool at_limit = read_limit_ != 0 && input_.length() >= read_limit_;
  const bool want = state_ == State::Open && read_disable_count_ == 0 && !at_limit;
  watchInputDrain(state_ == State::Open && at_limit);
  if (want == reading_) return;
  reading_ = want;
  if (want) {
    event_add(read_event_, nullptr);
    // Decrypted bytes OpenSSL holds raise no socket event: read them now.
    if (tls_ != nullptr && tls_->hasPending()) event_active(read_event_, EV_READ, 0);
  } else {
    event_del(read_event_);
  }
}

void Connection::readDisable(bool disable) {
  if (state_ == State::Closed) return;
  if (disable) {
    ++read_disable_count_;
  } else if (read_disable_count_ > 0) {
    --read_disable_count_;
  }
  updateReadInterest();
}

void Connection::close(CloseMode mode) {
  if (state_ == State::Closed) return;
  // A second flushing close (e.g. the stream's local reply closed, then the codec error path
  // closes again) must not cut the flush short and drop the answer.
  if (mode == CloseMode::FlushWrite && state_ == State::Flushing) return;
  if (mode == CloseMode::FlushWrite && state_ == State::Open && !output_.empty()) {
    state_ = State::Flushing;
    updateReadInterest();
    doWrite();
    return;  // doWrite() finishes the close once the output is empty
  }
  if (mode == CloseMode::Reset && fd_ >= 0) {
    linger lin{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
    tls_.reset();  // a reset sends no close_notify
  }
  closeNow(ConnectionEvent::LocalClose);
}

void Connection::closeNow(ConnectionEvent event) {
  if (state_ == State::Closed) return;
  state_ = State::Closed;
  event_del(read_event_);
  event_del(write_event_);
  event_del(flush_event_);
  reading_ = false;
  write_pending_ = false;
  if (fd_ >= 0) {
    if (tls_ != nullptr) tls_->shutdown();
    ::close(fd_);
    fd_ = -1;
  }
  if (handshake_timer_ != nullptr) handshake_timer_->disable();
  if (tls_established_) {
    tls_established_ = false;
    tls_observer_->onTlsConnectionClosed();
  }
  if (callbacks_ != nullptr) callbacks_->onEvent(event);
}

void Connection::onReadable(evutil_socket_t, short, void* arg) {
  static_cast<Connection*>(arg)->doRead();
}

void Connection::doRead() {
  if (state_ != State::Open) {
    if (tls_handshaking_) continueHandshake();
    return;
  }
  if (tls_ != nullptr) {
    doTlsRead();
    return;
  }
  const ssize_t got = large_reads_ ? readIntoInput() : readViaStack();
  if (got == kNoReadSpace) return;
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    closeNow(ConnectionEvent::RemoteClose);
    return;
  }
  if (got == 0) {
    closeNow(ConnectionEvent::RemoteClose);
    return;
  }
  large_reads_ = static_cast<size_t>(got) > kReadChunk / 2;
  if (sniff_pending_ && !checkNotTls()) return;
  if (callbacks_ != nullptr) {
    dispatcher_.enterReadCallback();
    callbacks_->onData(input_);
    dispatcher_.leaveReadCallback();  // writes what onData produced, on every connection
  }
  updateReadInterest();  // stop at the read limit until the consumer catches up
}

// Requests, heads and small bodies arrive in reads of a few hundred bytes. Read straight into
// an empty input buffer, each of them would allocate a 16 KiB block and free it again once the
// codec drained it, which costs far more than copying the bytes from the stack.
ssize_t Connection::readViaStack() {
  char chunk[kReadChunk];
  const ssize_t got = ::read(fd_, chunk, sizeof(chunk));
  if (got > 0) input_.add(chunk, static_cast<size_t>(got));
  return got;
}

// Bulk transfers read straight into space reserved at the end of the input buffer: no copy.
ssize_t Connection::readIntoInput() {
  evbuffer_iovec vec[2];
  int n = evbuffer_reserve_space(input_.raw(), kReadChunk, vec, 2);
  if (n <= 0) return kNoReadSpace;
  iovec iov[2];
  for (int i = 0; i < n; ++i) iov[i] = {vec[i].iov_base, vec[i].iov_len};
  const ssize_t got = ::readv(fd_, iov, n);
  if (got <= 0) {
    evbuffer_commit_space(input_.raw(), vec, 0);
    return got;
  }
  size_t left = static_cast<size_t>(got);
  for (int i = 0; i < n; ++i) {
    size_t take = left < vec[i].iov_len ? left : vec[i].iov_len;
    vec[i].iov_len = take;
    left -= take;
  }
  evbuffer_commit_space(input_.raw(), vec, n);
  return got;
}

void Connection::onWritable(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<Connection*>(arg);
  if (self->state_ == State::Connecting) {
    if (self->tls_handshaking_) {
      self->continueHandshake();
    } else {
      self->onConnectResult();
    }
    return;
  }
  self->doWrite();
}

void Connection::onConnectResult() {
  int error = 0;
  socklen_t len = sizeof(error);
  getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &len);
  event_del(write_event_);
  if (error != 0) {
    closeNow(ConnectionEvent::ConnectFailed);
    return;
  }
  if (tls_ != nullptr) {
    tls_handshaking_ = true;
    continueHandshake();  // raises Connected when done
    return;
  }
  state_ = State::Open;
  updateReadInterest();
  if (callbacks_ != nullptr) callbacks_->onEvent(ConnectionEvent::Connected);
  if (state_ == State::Open && !output_.empty()) doWrite();
}

void Connection::onFlush(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<Connection*>(arg);
  self->flush_queued_ = false;
  if (!self->write_pending_) self->doWrite();
}

void Connection::flushNow() {
  flush_queued_ = false;
  if (!write_pending_) doWrite();
}

void Connection::doWrite() {
  if (state_ != State::Open && state_ != State::Flushing) return;
  if (tls_ != nullptr) {
    doTlsWrite();
    return;
  }
  if (batch_queued_) return;  // leaves with the batch at the end of this pass
  if (!write_pending_ && dispatcher_.batchesWrites()) {
    batch_queued_ = true;
    dispatcher_.queueBatchedWrite(*this);
    return;
  }
  writeNow();
}

void Connection::writeNow() {
  while (!output_.empty()) {
    int written = evbuffer_write(output_.raw(), fd_);
    if (written < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      closeAfterWriteError();
      return;
    }
    if (written == 0) break;
  }
  afterWrite();
}

int Connection::prepareBatchedWrite(iovec* iov, int max) {
  batch_offered_ = 0;
  if ((state_ != State::Open && state_ != State::Flushing) || output_.empty()) {
    batch_queued_ = false;
    return 0;
  }
  // On Linux libevent's evbuffer_iovec is struct iovec: the chunks go straight into the batch.
  const int count = std::min(evbuffer_peek(output_.raw(), -1, nullptr, iov, max), max);
  for (int i = 0; i < count; ++i) batch_offered_ += iov[i].iov_len;
  return count;
}

void Connection::onBatchedWrite(int result) {
  batch_queued_ = false;
  if (state_ != State::Open && state_ != State::Flushing) return;
  if (result > 0) {
    output_.drain(static_cast<size_t>(result));
    // All offered went out and more is left (more chunks than one write takes): write on at
    // once. Less than offered: the socket is full, afterWrite() waits for EPOLLOUT.
    if (static_cast<size_t>(result) == batch_offered_ && !output_.empty()) {
      writeNow();
      return;
    }
  } else if (result == -EINTR) {
    writeNow();
    return;
  } else if (result < 0 && result != -EAGAIN && result != -EWOULDBLOCK) {
    closeAfterWriteError();
    return;
  }
  afterWrite();
}

void Connection::closeAfterWriteError() {
  // A flushing close was ours; otherwise the peer went away under the write.
  closeNow(state_ == State::Flushing ? ConnectionEvent::LocalClose : ConnectionEvent::RemoteClose);
}

void Connection::afterWrite() {
  if (above_high_ && output_.length() <= high_watermark_ / 2) {
    above_high_ = false;
    if (callbacks_ != nullptr) callbacks_->onBelowWriteBufferLowWatermark();
    if (state_ == State::Closed) return;
  }
  if (!output_.empty()) {
    if (!write_pending_) {
      write_pending_ = true;
      event_add(write_event_, nullptr);
    }
    return;
  }
  if (write_pending_) {
    write_pending_ = false;
    event_del(write_event_);
  }
  if (state_ == State::Flushing) closeNow(ConnectionEvent::LocalClose);
}

void Connection::onBufferGrew() {
  // Write the new bytes once whatever is producing them now has finished (one writev per
  // callback, not one per append).
  if (tls_ == nullptr && dispatcher_.batchesWrites()) {
    // With every other socket's write of this loop pass, in one system call.
    if (!write_pending_) doWrite();
  } else if (!flush_queued_ && !write_pending_ && state_ != State::Connecting &&
             state_ != State::Closed) {
    flush_queued_ = true;
    if (batch_writes_ || !dispatcher_.queueFlush(*this)) event_active(flush_event_, 0, 0);
  }
  if (high_watermark_ == 0 || above_high_ || callbacks_ == nullptr) return;
  if (output_.length() > high_watermark_) {
    above_high_ = true;
    callbacks_->onAboveWriteBufferHighWatermark();
  }
}

// An input callback costs libevent a call on every add to and drain of input_, i.e. several
// per request; it is needed only while reading waits for the consumer to drain input_ below
// the read limit, so it is registered just for that time.
void Connection::watchInputDrain(bool watch) {
  if (watch == (input_watch_ != nullptr)) return;
  if (watch) {
    input_watch_ = evbuffer_add_cb(input_.raw(), &Connection::onInputChanged, this);
  } else {
    // Safe from inside onInputChanged: libevent has already stepped past this entry.
    evbuffer_remove_cb_entry(input_.raw(), input_watch_);
    input_watch_ = nullptr;
  }
}

void Connection::onInputChanged(evbuffer*, const evbuffer_cb_info* info, void* arg) {
  // The consumer drained input below the read limit: start reading again.
  auto* self = static_cast<Connection*>(arg);
  if (info->n_deleted > 0 && !self->reading_) self->updateReadInterest();
}

}  // namespace ferry::net
