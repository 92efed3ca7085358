#include "proxy/admin/admin_server.h"

#include <sys/socket.h>
#include <unistd.h>

namespace ferry::admin {

AdminServer::AdminServer(event::Dispatcher& dispatcher, const AdminLimits& limits,
                         stats::Store& store)
    : dispatcher_(dispatcher), limits_(limits), stats_(store) {}

AdminServer::~AdminServer() {
  listener_.reset();
  connections_.clear();
}

void AdminServer::addHandler(const std::string& path, Handler handler) {
  handlers_[path] = std::move(handler);
}

void AdminServer::addPostHandler(const std::string& path, Handler handler) {
  post_handlers_[path] = std::move(handler);
}

Status AdminServer::start(const std::string& host, uint16_t port) {
  auto listener = net::Listener::create(
      dispatcher_, host, port, [this](int fd) { onAccept(fd); },
      [this](int) { stats_.accept_backoffs.inc(); });
  if (!listener.isOk()) {
    return unavailable("admin: " + listener.status().message());
  }
  listener_ = std::move(*listener);
  return Status::ok();
}

void AdminServer::onAccept(int fd) {
  if (connections_.size() >= limits_.max_connections) {
    // Liveness and readiness probes must not be refusable by idle connections (a monitor that
    // leaks them): the oldest one with no request in progress makes room, as nginx and HAProxy
    // close idle keep-alive connections when short of them. Closing it calls
    // onConnectionClosed, which takes it out of the list.
    AdminConnection* oldest_idle = nullptr;
    for (const auto& connection : connections_) {
      if (connection->idle()) {
        oldest_idle = connection.get();
        break;
      }
    }
    if (oldest_idle != nullptr) {
      stats_.idle_evictions.inc();
      oldest_idle->close();
    }
  }
  if (connections_.size() >= limits_.max_connections) {
    // Every connection is busy: as the data plane does over limits.max_connections, a clear
    // answer, then close. The answer fits in a fresh socket's buffer.
    stats_.connections_overflow.inc();
    static constexpr char kBusy[] =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
        "Retry-After: 1\r\nContent-Length: 27\r\nConnection: close\r\n\r\n"
        "too many admin connections\n";
    ::send(fd, kBusy, sizeof(kBusy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
    return;
  }
  connections_.push_back(std::make_unique<AdminConnection>(
      *this, net::Connection::fromAccepted(dispatcher_, fd), dispatcher_, limits_, stats_));
}

AdminResponse AdminServer::respond(std::string_view method, const std::string& path) {
  const bool post = method == "POST";
  auto action = post_handlers_.find(path);
  if (action != post_handlers_.end()) {
    if (post) return action->second();
    return AdminResponse{405, "text/plain; charset=utf-8", "use POST\n"};
  }
  if (post) return AdminResponse{405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
  auto it = handlers_.find(path);
  if (it == handlers_.end()) {
    return AdminResponse{404, "text/plain; charset=utf-8",
                         "not found; try /stats, /ready, /healthz, /peers\n"};
  }
  return it->second();
}

std::string AdminServer::allowedMethods(const std::string& path) const {
  return post_handlers_.count(path) != 0 ? "POST" : "GET, HEAD";
}

void AdminServer::onConnectionClosed(AdminConnection& connection) {
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (it->get() == &connection) {
      dispatcher_.deferredDelete(std::move(*it));
      connections_.erase(it);
      break;
    }
  }
  if (listener_ != nullptr) listener_->onDescriptorReleased();
}

}  // namespace ferry::admin
