#include "proxy/server/client_address_limit.h"

#include <netinet/in.h>
#include <sys/socket.h>

namespace ferry::server {

std::string ClientAddressLimit::keyOf(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return {};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    return std::string(reinterpret_cast<const char*>(&v4.sin_addr), sizeof(v4.sin_addr));
  }
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    return std::string(reinterpret_cast<const char*>(&v6.sin6_addr), sizeof(v6.sin6_addr));
  }
  return {};
}

bool ClientAddressLimit::acquire(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t& open = open_[key];
  if (open >= limit_) {
    if (open == 0) open_.erase(key);
    return false;
  }
  ++open;
  return true;
}

void ClientAddressLimit::release(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = open_.find(key);
  if (it == open_.end()) return;
  if (--it->second == 0) open_.erase(it);
}

}  // namespace ferry::server
