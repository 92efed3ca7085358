#pragma once
// The admin listener (default 127.0.0.1:9901) on the main thread's dispatcher: small,
// local-only GET endpoints (/stats, /ready, /healthz, /peers, ...) and POST actions (/drain).
// It never shares a listener or a thread with the data plane, but it does share the process's
// descriptors, so it gets the data plane's limits (admin_limits.h): a connection cap, a head
// size limit, a head timeout from accept and an idle timeout, each counted (admin_stats.h);
// its listener backs off when accept() runs out of descriptors (net/listener.h).

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>

#include "proxy/admin/admin_connection.h"
#include "proxy/admin/admin_limits.h"
#include "proxy/admin/admin_stats.h"
#include "proxy/common/status.h"
#include "proxy/event/dispatcher.h"
#include "proxy/net/listener.h"

namespace ferry::admin {

struct AdminResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class AdminServer : public AdminConnectionOwner {
 public:
  using Handler = std::function<AdminResponse()>;

  AdminServer(event::Dispatcher& dispatcher, const AdminLimits& limits, stats::Store& store);
  ~AdminServer() override;
  // Registers `handler` for GET `path` (exact match). Call before or after start().
  void addHandler(const std::string& path, Handler handler);
  // Registers `handler` for POST `path` (an action, e.g. /drain): other methods get 405, and
  // the request may carry no body (Content-Length: 0 at most).
  void addPostHandler(const std::string& path, Handler handler);
  Status start(const std::string& host, uint16_t port);
  uint16_t port() const { return listener_ != nullptr ? listener_->port() : 0; }

  // AdminConnectionOwner
  AdminResponse respond(std::string_view method, const std::string& path) override;
  std::string allowedMethods(const std::string& path) const override;
  void onConnectionClosed(AdminConnection& connection) override;

 private:
  void onAccept(int fd);

  event::Dispatcher& dispatcher_;
  AdminLimits limits_;
  AdminStats stats_;
  std::unique_ptr<net::Listener> listener_;
  std::list<std::unique_ptr<AdminConnection>> connections_;
  std::map<std::string, Handler> handlers_;
  std::map<std::string, Handler> post_handlers_;
};

}  // namespace ferry::admin
