#include "proxy/net/listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

namespace ferry::net {

namespace {
// One line per interval for the whole process: every worker's listener (and the admin's) fail
// together when the process is out of descriptors.
std::atomic<int64_t> last_accept_error_log_ms{INT64_MIN / 2};
std::atomic<uint64_t> accept_errors_unlogged{0};

void logAcceptError(const std::string& address, int error) {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_accept_error_log_ms.load(std::memory_order_relaxed);
  if (now - last < Listener::kAcceptErrorLogInterval.count() ||
      !last_accept_error_log_ms.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    accept_errors_unlogged.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t unlogged = accept_errors_unlogged.exchange(0, std::memory_order_relaxed);
  std::fprintf(stderr,
               "ferry: accept() on %s failed: %s; not accepting for %lld ms (%llu more failures "
               "since the last such line; this line is written at most every %lld s)\n",
               address.c_str(), std::strerror(error),
               static_cast<long long>(Listener::kAcceptBackoff.count()),
               static_cast<unsigned long long>(unlogged),
               static_cast<long long>(Listener::kAcceptErrorLogInterval.count() / 1000));
}
}  // namespace

bool toSockaddr(const std::string& host, uint16_t port, sockaddr_storage& out, socklen_t& len) {
  out = {};
  const std::string& literal = host == "localhost" ? std::string("127.0.0.1") : host;
  auto* in4 = reinterpret_cast<sockaddr_in*>(&out);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (inet_pton(AF_INET, literal.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(port);
    len = sizeof(sockaddr_in);
    return true;
  }
  if (inet_pton(AF_INET6, literal.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

Listener::Listener(event::Dispatcher& dispatcher, evconnlistener* listener, std::string address,
                   uint16_t port, AcceptCallback on_accept, AcceptErrorCallback on_error)
    : listener_(listener),
      address_(std::move(address)),
      port_(port),
      on_accept_(std::move(on_accept)),
      on_error_(std::move(on_error)),
      backoff_timer_(dispatcher.createTimer([this] { resume(); })) {}

StatusOr<std::unique_ptr<Listener>> Listener::create(event::Dispatcher& dispatcher,
                                                     const std::string& host, uint16_t port,
                                                     AcceptCallback on_accept,
                                                     AcceptErrorCallback on_error) {
  sockaddr_storage ss;
  socklen_t len;
  if (!toSockaddr(host, port, ss, len)) return invalidArgument("not an IP address: " + host);
  auto* raw = evconnlistener_new_bind(
      dispatcher.base(), nullptr, nullptr,
      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT | LEV_OPT_CLOSE_ON_EXEC,
      1024, reinterpret_cast<sockaddr*>(&ss), static_cast<int>(len));
  if (raw == nullptr) {
    return unavailable("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                       evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  getsockname(evconnlistener_get_fd(raw), reinterpret_cast<sockaddr*>(&bound), &bound_len);
  uint16_t bound_port = bound.ss_family == AF_INET6
                            ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                            : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  auto listener = std::unique_ptr<Listener>(
      new Listener(dispatcher, raw, host + ":" + std::to_string(bound_port), bound_port,
                   std::move(on_accept), std::move(on_error)));
  evconnlistener_set_cb(raw, &Listener::onAccept, listener.get());
  evconnlistener_set_error_cb(raw, &Listener::onAcceptError);
  return listener;
}

Status probeExclusiveBind(const std::string& host, uint16_t port, int* error) {
  sockaddr_storage ss;
  socklen_t len;
  if (!toSockaddr(host, port, ss, len)) return invalidArgument("not an IP address: " + host);
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    if (error) *error = errno;
    return unavailable(std::string("socket: ") + std::strerror(errno));
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&ss), len);
  const int bind_errno = errno;
  ::close(fd);
  if (rc == 0) return Status::ok();
  if (error) *error = bind_errno;
  return unavailable(std::strerror(bind_errno));
}

Listener::~Listener() {
  backoff_timer_.reset();
  evconnlistener_free(listener_);
}

// libevent calls this for every accept() error it does not retry itself (EAGAIN, EINTR and
// ECONNABORTED it does), with errno still set.
void Listener::onAcceptError(evconnlistener*, void* arg) {
  auto* self = static_cast<Listener*>(arg);
  const int error = errno;
  evconnlistener_disable(self->listener_);
  self->backing_off_ = true;
  self->backoff_timer_->enable(kAcceptBackoff);
  logAcceptError(self->address_, error);
  if (self->on_error_) self->on_error_(error);
}

void Listener::resume() {
  if (!backing_off_) return;
  backing_off_ = false;
  backoff_timer_->disable();
  evconnlistener_enable(listener_);
}

void Listener::onDescriptorReleased() {
  // Resume on the next loop turn, not inside the caller's close path.
  if (backing_off_) backoff_timer_->enable(event::Millis(0));
}

void Listener::onAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
  static_cast<Listener*>(arg)->on_accept_(fd);
}

}  // namespace ferry::net
