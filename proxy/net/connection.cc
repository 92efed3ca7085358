#include "proxy/net/connection.h"

#include "proxy/net/listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace ferry::net {

namespace {
std::atomic<uint64_t> next_connection_id{1};

// Streamed responses must leave as soon as they arrive: no Nagle delay on any socket.
void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}
}  // namespace

Connection::Connection(event::Dispatcher& dispatcher, bufferevent* bev, State state)
    : dispatcher_(dispatcher),
      bev_(bev),
      input_(Buffer::borrow(bufferevent_get_input(bev))),
      output_(Buffer::borrow(bufferevent_get_output(bev))),
      state_(state),
      id_(next_connection_id++) {
  bufferevent_setcb(bev_, &Connection::onRead, &Connection::onWrite, &Connection::onBevEvent,
                    this);
  evbuffer_add_cb(bufferevent_get_output(bev_), &Connection::onOutputChanged, this);
  bufferevent_enable(bev_, EV_READ | EV_WRITE);
}

std::unique_ptr<Connection> Connection::fromAccepted(event::Dispatcher& dispatcher, int fd) {
  evutil_make_socket_nonblocking(fd);
  setNoDelay(fd);
  bufferevent* bev = bufferevent_socket_new(dispatcher.base(), fd, BEV_OPT_CLOSE_ON_FREE);
  return std::unique_ptr<Connection>(new Connection(dispatcher, bev, State::Open));
}

std::unique_ptr<Connection> Connection::connect(event::Dispatcher& dispatcher,
                                                const std::string& host, uint16_t port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  bool numeric = toSockaddr(host, port, ss, len);
  bufferevent* bev = bufferevent_socket_new(dispatcher.base(), -1, BEV_OPT_CLOSE_ON_FREE);
  auto conn = std::unique_ptr<Connection>(new Connection(dispatcher, bev, State::Connecting));
  if (!numeric || bufferevent_socket_connect(bev, reinterpret_cast<sockaddr*>(&ss), static_cast<int>(len)) !=
      0) {
    // Reported on the next loop turn, so that callers always see the failure as an event.
    auto* raw = conn.get();
    conn->failure_timer_ = dispatcher.createTimer(
        [raw] { raw->closeNow(ConnectionEvent::ConnectFailed); });
    conn->failure_timer_->enable(event::Millis(0));
  }
  return conn;
}

Connection::~Connection() {
  if (bev_ != nullptr) {
    evbuffer_remove_cb(bufferevent_get_output(bev_), &Connection::onOutputChanged, this);
    bufferevent_free(bev_);
  }
}

void Connection::setWriteWatermark(size_t high_bytes) { high_watermark_ = high_bytes; }

void Connection::setReadLimit(size_t bytes) { bufferevent_setwatermark(bev_, EV_READ, 0, bytes); }

void Connection::readDisable(bool disable) {
  if (state_ == State::Closed) return;
  if (disable) {
    if (read_disable_count_++ == 0) bufferevent_disable(bev_, EV_READ);
  } else if (read_disable_count_ > 0 && --read_disable_count_ == 0) {
    bufferevent_enable(bev_, EV_READ);
  }
}

void Connection::redeliverInput() {
  if (state_ == State::Open && callbacks_ != nullptr && !input_.empty()) callbacks_->onData(input_);
}

void Connection::close(CloseMode mode) {
  if (state_ == State::Closed) return;
  // A second flushing close (e.g. the stream's local reply closed, then the codec error path
  // closes again) must not cut the flush short and drop the answer.
  if (mode == CloseMode::FlushWrite && state_ == State::Flushing) return;
  if (mode == CloseMode::FlushWrite && state_ == State::Open && !output_.empty()) {
    state_ = State::Flushing;
    bufferevent_disable(bev_, EV_READ);
    return;  // onWrite finishes the close once the output is empty
  }
  if (mode == CloseMode::Reset) {
    linger lin{1, 0};
    evutil_socket_t fd = bufferevent_getfd(bev_);
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
  }
  closeNow(ConnectionEvent::LocalClose);
}

void Connection::closeNow(ConnectionEvent event) {
  state_ = State::Closed;
  bufferevent_disable(bev_, EV_READ | EV_WRITE);
  evutil_socket_t fd = bufferevent_getfd(bev_);
  if (fd >= 0) {
    // Close the socket now; the bufferevent itself is freed with the Connection.
    bufferevent_setfd(bev_, -1);
    ::close(fd);
  }
  if (callbacks_ != nullptr) callbacks_->onEvent(event);
}

void Connection::onRead(bufferevent*, void* arg) {
  auto* self = static_cast<Connection*>(arg);
  if (self->state_ == State::Open && self->callbacks_ != nullptr) self->callbacks_->onData(self->input_);
}

void Connection::onWrite(bufferevent*, void* arg) {
  auto* self = static_cast<Connection*>(arg);
  if (self->state_ == State::Flushing && self->output_.empty()) {
    self->closeNow(ConnectionEvent::LocalClose);
  }
}

void Connection::onBevEvent(bufferevent*, short what, void* arg) {
  auto* self = static_cast<Connection*>(arg);
  if (what & BEV_EVENT_CONNECTED) {
    self->state_ = State::Open;
    if (self->callbacks_ != nullptr) self->callbacks_->onEvent(ConnectionEvent::Connected);
    return;
  }
  if (self->state_ == State::Closed) return;
  if (self->state_ == State::Connecting) {
    self->closeNow(ConnectionEvent::ConnectFailed);
    return;
  }
  // EOF or error. Bytes read before the EOF were delivered by onRead already.
  self->closeNow(self->state_ == State::Flushing ? ConnectionEvent::LocalClose
                                                 : ConnectionEvent::RemoteClose);
}

void Connection::onOutputChanged(evbuffer* buf, const evbuffer_cb_info* info, void* arg) {
  auto* self = static_cast<Connection*>(arg);
  if (self->high_watermark_ == 0 || self->callbacks_ == nullptr) return;
  size_t length = info->orig_size + info->n_added - info->n_deleted;
  if (!self->above_high_ && length > self->high_watermark_) {
    self->above_high_ = true;
    self->callbacks_->onAboveWriteHighWatermark();
  } else if (self->above_high_ && length <= self->high_watermark_ / 2) {
    self->above_high_ = false;
    self->callbacks_->onBelowWriteLowWatermark();
  }
}

}  // namespace ferry::net
