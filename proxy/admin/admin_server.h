#pragma once
// The admin listener (default 127.0.0.1:9901) on the main thread's dispatcher, served with
// libevent's evhttp: small, local-only GET endpoints (/stats, /ready, /healthz, /peers, ...).
// It never shares a listener or a thread with the data plane.

#include <event2/http.h>

#include <functional>
#include <map>
#include <string>

#include "proxy/common/status.h"
#include "proxy/event/dispatcher.h"

namespace ferry::admin {

struct AdminResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class AdminServer {
 public:
  using Handler = std::function<AdminResponse()>;

  explicit AdminServer(event::Dispatcher& dispatcher);
  ~AdminServer();
  // Registers `handler` for GET `path` (exact match). Call before or after start().
  void addHandler(const std::string& path, Handler handler);
  Status start(const std::string& host, uint16_t port);
  uint16_t port() const { return port_; }

 private:
  static void onRequest(evhttp_request* request, void* arg);
  evhttp* http_;
  uint16_t port_ = 0;
  std::map<std::string, Handler> handlers_;
};

}  // namespace ferry::admin
