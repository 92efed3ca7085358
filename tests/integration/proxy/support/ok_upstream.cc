#include "tests/integration/proxy/support/ok_upstream.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
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

namespace {

// The request target of the head at the start of `in`.
std::string targetOf(const std::string& in) {
  const size_t start = in.find(' ');
  const size_t end = start == std::string::npos ? start : in.find(' ', start + 1);
  return end == std::string::npos ? "" : in.substr(start + 1, end - start - 1);
}

// Writes `bytes` whole (blocking, polling for stop); false when the peer left or we stop.
bool sendAll(int fd, const std::string& bytes, const std::atomic<bool>& stop) {
  size_t done = 0;
  while (done < bytes.size() && !stop) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return done == bytes.size();
}

}  // namespace

// Requests without bodies: each head ends at an empty line.
void OkUpstream::serve(int fd) {
  std::string in;
  char buf[4096];
  bool holding = false;
  while (!stop_) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t got = ::read(fd, buf, sizeof(buf));
    if (got <= 0) break;
    in.append(buf, static_cast<size_t>(got));
    size_t end;
    while (!holding && (end = in.find("\r\n\r\n")) != std::string::npos) {
      const std::string target = targetOf(in);
      in.erase(0, end + 4);
      ++requests_;
      if (target.rfind("/hold", 0) == 0) {
        holding = true;  // never answered: keep reading until the connection ends
        ++held_;
        break;
      }
      if (target.rfind("/big/", 0) == 0) {
        const size_t size = std::stoul(target.substr(5));
        std::string head =
            "HTTP/1.1 200 OK\r\ncontent-length: " + std::to_string(size) + "\r\n\r\n";
        if (!sendAll(fd, head, stop_)) break;
        const std::string block(64 * 1024, 'x');
        size_t left = size;
        bool ok = true;
        while (left > 0 && ok) {
          const size_t n = std::min(left, block.size());
          ok = sendAll(fd, block.substr(0, n), stop_);
          left -= n;
        }
        if (!ok) break;
        continue;
      }
      static const std::string kOk = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
      if (::send(fd, kOk.data(), kOk.size(), MSG_NOSIGNAL) < 0) break;
    }
  }
  if (holding) --held_;
  ::close(fd);
}

}  // namespace ferry::itest
