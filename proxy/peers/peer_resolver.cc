#include "proxy/peers/peer_resolver.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

namespace ferry::peers {

bool isIpLiteral(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::optional<std::string> resolveWithSystem(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  std::optional<std::string> v4;
  std::optional<std::string> v6;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN];
    if (a->ai_family == AF_INET && !v4) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof(text));
      v4 = text;
    } else if (a->ai_family == AF_INET6 && !v6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, text,
                sizeof(text));
      v6 = text;
    }
  }
  freeaddrinfo(found);
  return v4 ? v4 : v6;
}

}  // namespace ferry::peers
