#include "proxy/net/listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <utility>

namespace ferry::net {

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

Listener::Listener(evconnlistener* listener, uint16_t port, AcceptCallback on_accept)
    : listener_(listener), port_(port), on_accept_(std::move(on_accept)) {}

StatusOr<std::unique_ptr<Listener>> Listener::create(event::Dispatcher& dispatcher,
                                                     const std::string& host, uint16_t port,
                                                     AcceptCallback on_accept) {
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
  auto listener = std::unique_ptr<Listener>(new Listener(raw, bound_port, std::move(on_accept)));
  evconnlistener_set_cb(raw, &Listener::onAccept, listener.get());
  return listener;
}

Listener::~Listener() { evconnlistener_free(listener_); }

void Listener::onAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
  static_cast<Listener*>(arg)->on_accept_(fd);
}

}  // namespace ferry::net
