#include "proxy/admin/admin_connection.h"

#include <event2/buffer.h>

#include "proxy/admin/admin_server.h"

namespace ferry::admin {

namespace {

std::string_view reasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 202:
      return "Accepted";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return status < 400 ? "OK" : "Error";
  }
}

}  // namespace

AdminConnection::AdminConnection(AdminConnectionOwner& owner, net::ConnectionPtr connection,
                                 event::Dispatcher& dispatcher, const AdminLimits& limits,
                                 AdminStats& stats)
    : owner_(owner),
      connection_(std::move(connection)),
      limits_(limits),
      stats_(stats),
      parser_(HTTP_REQUEST, limits.max_head_bytes) {
  connection_->setCallbacks(*this);
  connection_->setWriteWatermark(limits_.max_pending_output);
  // Never more than one head's worth read ahead: a larger head is refused, not buffered.
  connection_->setReadLimit(limits_.max_head_bytes);
  head_timer_ = dispatcher.createTimer([this] { onHeadTimeout(); });
  idle_timer_ = dispatcher.createTimer([this] {
    stats_.idle_timeouts.inc();
    close();
  });
  stats_.connections_active.add(1);
  armTimers();
}

// A closed connection left the gauge in onEvent(): its deferred deletion may run after the
// AdminServer (and its stats) are gone, at the main dispatcher's destruction.
AdminConnection::~AdminConnection() {
  if (!closed_) stats_.connections_active.sub(1);
}

void AdminConnection::close() {
  if (!closed_) connection_->close(net::CloseMode::NoFlush);
}

bool AdminConnection::idle() const {
  return !closed_ && !closing_ && !parser_.headStarted() && connection_->input().empty() &&
         connection_->output().empty();
}

void AdminConnection::onData(Buffer&) { serveInput(); }

void AdminConnection::onBelowWriteBufferLowWatermark() { serveInput(); }

void AdminConnection::serveInput() {
  Buffer& input = connection_->input();
  while (!closed_ && !closing_ && !connection_->aboveHighWatermark() && !input.empty()) {
    // The data plane's request parser (llhttp, strict; head size and field rules): what the
    // admin port accepts is what the listener accepts.
    const http::http1::Parser::Result result = parser_.execute(input);
    if (result.error) {
      refuse(parser_.errorStatus(), "", parser_.errorDetail() + "\n");
      return;
    }
    if (result.head_complete && !serveHead()) return;
    if (result.consumed == 0 && !result.head_complete && !result.message_complete) break;
  }
  armTimers();
}

bool AdminConnection::serveHead() {
  head_timer_->disable();  // the next head gets a deadline of its own
  served_any_ = true;
  const std::string& target = parser_.target();
  if (target.empty() || target[0] != '/') {
    refuse(400, "Bad Request", "the request target must be a path\n");
    return false;
  }
  if (parser_.chunked() || (parser_.hasContentLength() && parser_.contentLength() > 0)) {
    // Admin endpoints take no body; reading one would need its own limits.
    refuse(400, "Bad Request", "admin requests take no body\n");
    return false;
  }
  const std::string_view method = llhttp_method_name(parser_.method());
  const bool keep_alive = parser_.shouldKeepAlive();
  const bool http10 = parser_.httpMinor() == 0;
  const bool head_only = method == "HEAD";
  // POST only for the actions (e.g. /drain), without a body (refused above).
  if (method != "GET" && !head_only && method != "POST") {
    stats_.parse_errors.inc();
    writeResponse(405, "text/plain; charset=utf-8", "only GET, HEAD and POST\n", false, true,
                  "Allow: GET, HEAD, POST\r\n");
    return false;
  }
  std::string path = target.substr(0, target.find('?'));
  AdminResponse response = owner_.respond(method, path);
  if (response.status == 405) {
    // A method the path does not take: counted with the other refusals, then close.
    stats_.parse_errors.inc();
    writeResponse(405, response.content_type, response.body, head_only, true,
                  "Allow: " + owner_.allowedMethods(path) + "\r\n");
    return false;
  }
  writeResponse(response.status, response.content_type, response.body, head_only, !keep_alive,
                http10 && keep_alive ? "Connection: keep-alive\r\n" : "");
  return keep_alive;
}

void AdminConnection::refuse(int status, std::string_view, std::string_view body) {
  stats_.parse_errors.inc();
  writeResponse(status, "text/plain; charset=utf-8", std::string(body), false, true);
}

void AdminConnection::writeResponse(int status, const std::string& content_type,
                                    const std::string& body, bool head_only, bool close_after,
                                    std::string_view extra_headers) {
  std::string out =
      "HTTP/1.1 " + std::to_string(status) + " " + std::string(reasonPhrase(status)) +
      "\r\nContent-Type: " + content_type +
      "\r\nCache-Control: no-store\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  out += extra_headers;
  if (close_after) out += "Connection: close\r\n";
  out += "\r\n";
  if (!head_only) out += body;
  connection_->output().add(out);
  if (close_after) {
    closing_ = true;
    head_timer_->disable();
    idle_timer_->disable();
    connection_->close(net::CloseMode::FlushWrite);
  }
}

void AdminConnection::armTimers() {
  if (closed_ || closing_) return;
  if (!served_any_ || parser_.headStarted() || !connection_->input().empty()) {
    // From accept for the first request, from its first byte for later ones; bytes that
    // trickle in do not move the deadline.
    idle_timer_->disable();
    if (!head_timer_->enabled()) head_timer_->enable(limits_.head_timeout);
  } else {
    head_timer_->disable();
    idle_timer_->enable(limits_.idle_timeout);
  }
}

void AdminConnection::onHeadTimeout() {
  stats_.request_head_timeouts.inc();
  if (!parser_.headStarted() && connection_->input().empty()) {
    close();  // not a byte arrived: nothing to answer
    return;
  }
  writeResponse(408, "text/plain; charset=utf-8", "request head not received in time\n", false,
                true);
}

void AdminConnection::onEvent(net::ConnectionEvent event) {
  if (event != net::ConnectionEvent::RemoteClose && event != net::ConnectionEvent::LocalClose) {
    return;
  }
  if (closed_) return;
  closed_ = true;
  stats_.connections_active.sub(1);
  head_timer_->disable();
  idle_timer_->disable();
  owner_.onConnectionClosed(*this);
}

}  // namespace ferry::admin
