#include "tests/integration/proxy/support/fake_upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "integration/harness/loopback.h"

namespace ferry::itest {

namespace {
using testing::listenOnLoopback;

int remainingMs(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}
}  // namespace

FakeUpstream::FakeUpstream() { listen_fd_ = listenOnLoopback(port_); }

FakeUpstream::~FakeUpstream() { close(); }

void FakeUpstream::close() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  connections_.clear();
}

Socket* FakeUpstream::waitForConnection(Deadline deadline) {
  if (listen_fd_ < 0) return nullptr;
  for (;;) {
    pollfd p{listen_fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, remainingMs(deadline));
    if (rc == 0) return nullptr;
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return nullptr;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    connections_.push_back(std::make_unique<Socket>(fd));
    return connections_.back().get();
  }
}

std::optional<FakeUpstream::Request> FakeUpstream::waitForRequest(Deadline deadline) {
  for (;;) {
    for (auto& c : connections_) {
      HttpMessage message;
      size_t consumed = 0;
      if (c->buffered().empty()) continue;
      ParseState state = parseMessage(c->buffered(), true, false, c->eof(), message, consumed);
      if (state == ParseState::Complete) {
        c->buffered().erase(0, consumed);
        return Request{c.get(), std::move(message)};
      }
    }
    std::vector<pollfd> fds;
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& c : connections_) {
      if (c->valid() && !c->eof() && !c->reset()) fds.push_back({c->fd(), POLLIN, 0});
    }
    int rc = ::poll(fds.data(), fds.size(), remainingMs(deadline));
    if (rc == 0) return std::nullopt;
    if (rc < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (fds[0].revents & POLLIN) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) connections_.push_back(std::make_unique<Socket>(fd));
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      for (auto& c : connections_) {
        if (c->fd() == fds[i].fd) c->readMore(Clock::now());
      }
    }
  }
}

uint16_t unusedPort() {
  uint16_t port = 0;
  int fd = listenOnLoopback(port);
  ::close(fd);
  return port;
}

}  // namespace ferry::itest
