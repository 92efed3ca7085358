#include "tests/integration/proxy/support/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace ferry::itest {

namespace {
int remainingMs(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}
bool waitFor(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, remainingMs(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}
}  // namespace

Socket::Socket(int fd) : fd_(fd) {
  if (fd_ >= 0) {
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
}

Socket::~Socket() { close(); }

Socket::Socket(Socket&& other) noexcept { *this = std::move(other); }

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    buffered_ = std::move(other.buffered_);
    eof_ = other.eof_;
    reset_ = other.reset_;
  }
  return *this;
}

Socket Socket::connectTo(uint16_t port, int* error) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (error != nullptr) *error = errno;
    ::close(fd);
    return Socket();
  }
  return Socket(fd);
}

bool Socket::sendAll(std::string_view bytes, Deadline deadline) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitFor(fd_, POLLOUT, deadline)) return false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
  return true;
}

bool Socket::readMore(Deadline deadline, size_t max) {
  if (eof_ || reset_ || fd_ < 0) return false;
  for (;;) {
    size_t old = buffered_.size();
    buffered_.resize(old + max);
    ssize_t n = ::recv(fd_, buffered_.data() + old, max, 0);
    buffered_.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
    if (n > 0) return true;
    if (n == 0) {
      eof_ = true;
      return false;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      reset_ = true;
      return false;
    }
    if (!waitFor(fd_, POLLIN, deadline)) return false;
  }
}

std::optional<std::string> Socket::readUntil(std::string_view delim, Deadline deadline) {
  size_t searched = 0;
  for (;;) {
    size_t at = buffered_.find(delim, searched > delim.size() ? searched - delim.size() : 0);
    if (at != std::string::npos) {
      std::string out = buffered_.substr(0, at + delim.size());
      buffered_.erase(0, at + delim.size());
      return out;
    }
    searched = buffered_.size();
    if (!readMore(deadline)) return std::nullopt;
  }
}

std::optional<std::string> Socket::readExactly(size_t n, Deadline deadline) {
  while (buffered_.size() < n) {
    if (!readMore(deadline, std::max<size_t>(n - buffered_.size(), 4096))) return std::nullopt;
  }
  std::string out = buffered_.substr(0, n);
  buffered_.erase(0, n);
  return out;
}

std::optional<std::string> Socket::readToEof(Deadline deadline) {
  while (readMore(deadline)) {
  }
  if (!eof_ && !reset_) return std::nullopt;
  return std::exchange(buffered_, std::string());
}

bool Socket::waitForClose(Deadline deadline) {
  while (readMore(deadline)) {
  }
  return eof_ || reset_;
}

bool Socket::anythingWithin(std::chrono::milliseconds window) {
  size_t before = buffered_.size();
  readMore(deadlineIn(window));
  return buffered_.size() > before || eof_ || reset_;
}

void Socket::shutdownWrite() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void Socket::resetClose() {
  if (fd_ < 0) return;
  linger lin{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
  close();
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::setReceiveBuffer(int bytes) {
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

}  // namespace ferry::itest
