#include "tests/integration/listener_tls/ok_upstream.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace ferry::itest {

OkUpstream::OkUpstream() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::listen(listen_fd_, 128);
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) connections_.emplace_back([this, fd] { serve(fd); });
    }
  });
}

OkUpstream::~OkUpstream() {
  stop_ = true;
  acceptor_.join();
  for (auto& t : connections_) t.join();
  ::close(listen_fd_);
}

// Requests without bodies: each head ends at an empty line.
void OkUpstream::serve(int fd) {
  std::string in;
  char buf[4096];
  while (!stop_) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t got = ::read(fd, buf, sizeof(buf));
    if (got <= 0) break;
    in.append(buf, static_cast<size_t>(got));
    size_t end;
    while ((end = in.find("\r\n\r\n")) != std::string::npos) {
      in.erase(0, end + 4);
      ++requests_;
      static const std::string kOk = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
      if (::send(fd, kOk.data(), kOk.size(), MSG_NOSIGNAL) < 0) break;
    }
  }
  ::close(fd);
}

}  // namespace ferry::itest
