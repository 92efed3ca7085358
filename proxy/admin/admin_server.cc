#include "proxy/admin/admin_server.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace ferry::admin {

AdminServer::AdminServer(event::Dispatcher& dispatcher) : http_(evhttp_new(dispatcher.base())) {
  evhttp_set_gencb(http_, &AdminServer::onRequest, this);
  evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
}

AdminServer::~AdminServer() { evhttp_free(http_); }

void AdminServer::addHandler(const std::string& path, Handler handler) {
  handlers_[path] = std::move(handler);
}

Status AdminServer::start(const std::string& host, uint16_t port) {
  evhttp_bound_socket* socket = evhttp_bind_socket_with_handle(http_, host.c_str(), port);
  if (socket == nullptr) {
    return unavailable("admin: cannot listen on " + host + ":" + std::to_string(port));
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(evhttp_bound_socket_get_fd(socket), reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                   : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return Status::ok();
}

void AdminServer::onRequest(evhttp_request* request, void* arg) {
  auto* self = static_cast<AdminServer*>(arg);
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(request);
  const char* path = uri != nullptr ? evhttp_uri_get_path(uri) : nullptr;
  auto it = self->handlers_.find(path != nullptr ? path : "");
  AdminResponse response;
  if (it == self->handlers_.end()) {
    response.status = 404;
    response.body = "not found; try /stats, /ready, /healthz, /peers\n";
  } else {
    response = it->second();
  }
  evkeyvalq* headers = evhttp_request_get_output_headers(request);
  evhttp_add_header(headers, "Content-Type", response.content_type.c_str());
  evhttp_add_header(headers, "Cache-Control", "no-store");
  evbuffer* body = evbuffer_new();
  evbuffer_add(body, response.body.data(), response.body.size());
  evhttp_send_reply(request, response.status, nullptr, body);
  evbuffer_free(body);
}

}  // namespace ferry::admin
