#pragma once
// "HOST:PORT" as a socket address, for the bench tools (cell-loadgen, sse-bench). Resolved once
// at start-up, IPv4.

#include <netdb.h>
#include <sys/socket.h>

#include <cstring>
#include <string>

namespace ferry::bench {

struct HostPort {
  std::string text;  // as given
  sockaddr_storage addr{};
  socklen_t len = 0;
};

inline bool resolveHostPort(const std::string& hostport, HostPort* out) {
  out->text = hostport;
  auto colon = hostport.rfind(':');
  if (colon == std::string::npos) return false;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(hostport.substr(0, colon).c_str(), hostport.substr(colon + 1).c_str(), &hints,
                  &res) != 0 ||
      res == nullptr) {
    return false;
  }
  std::memcpy(&out->addr, res->ai_addr, res->ai_addrlen);
  out->len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

}  // namespace ferry::bench
