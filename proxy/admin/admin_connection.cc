#include "proxy/admin/admin_connection.h"

#include <event2/buffer.h>

#include <vector>

#include "proxy/admin/admin_server.h"
#include "proxy/http/header_map.h"

namespace ferry::admin {

namespace {

using http::equalsIgnoreCase;  // field names compare case-insensitively (RFC 9110 §5.1)

std::string_view reasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return status < 400 ? "OK" : "Error";
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// True when the comma-separated `value` lists `token` (RFC 9110 §7.6.1 Connection options).
bool hasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    if (equalsIgnoreCase(trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

std::vector<std::string_view> splitLines(std::string_view head) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    size_t end = head.find("\r\n");
    if (end == std::string_view::npos) end = head.size();
    lines.push_back(head.substr(0, end));
    head.remove_prefix(end == head.size() ? end : end + 2);
  }
  return lines;
}

}  // namespace

AdminConnection::AdminConnection(AdminConnectionOwner& owner, net::ConnectionPtr connection,
                                 event::Dispatcher& dispatcher, const AdminLimits& limits,
                                 AdminStats& stats)
    : owner_(owner), connection_(std::move(connection)), limits_(limits), stats_(stats) {
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

void AdminConnection::onData(Buffer&) { serveInput(); }

void AdminConnection::onBelowWriteLowWatermark() { serveInput(); }

void AdminConnection::serveInput() {
  Buffer& input = connection_->input();
  while (!closed_ && !closing_ && !connection_->aboveHighWatermark()) {
    // RFC 9112 §2.2: empty lines before a request line are ignored.
    while (input.length() >= 2 && input.linearize(2) == "\r\n") input.drain(2);
    if (input.empty()) break;
    evbuffer_ptr end = evbuffer_search(input.raw(), "\r\n\r\n", 4, nullptr);
    const size_t head_bytes = end.pos < 0 ? input.length() : static_cast<size_t>(end.pos) + 4;
    if (head_bytes > limits_.max_head_bytes ||
        (end.pos < 0 && input.length() >= limits_.max_head_bytes)) {
      refuse(431, "Request Header Fields Too Large", "request head too large\n");
      return;
    }
    if (end.pos < 0) break;  // the rest of the head is still coming
    std::string head(input.linearize(head_bytes));
    input.drain(head_bytes);
    head_timer_->disable();  // the next head gets a deadline of its own
    served_any_ = true;
    if (!serveHead(head)) return;
  }
  armTimers();
}

bool AdminConnection::serveHead(std::string_view head) {
  head.remove_suffix(4);  // the blank line that ends the head
  std::vector<std::string_view> lines = splitLines(head);
  // Request line: method SP request-target SP HTTP-version (RFC 9112 §3).
  std::string_view line = lines.empty() ? std::string_view() : lines[0];
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    refuse(400, "Bad Request", "malformed request line\n");
    return false;
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if ((version != "HTTP/1.1" && version != "HTTP/1.0") || target.empty() || target[0] != '/') {
    refuse(400, "Bad Request", "malformed request line\n");
    return false;
  }
  bool keep_alive = version == "HTTP/1.1";
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view field = lines[i];
    size_t colon = field.find(':');
    // No obs-fold, no whitespace before the colon, no bare CR/LF/NUL (RFC 9112 §5).
    if (colon == 0 || colon == std::string_view::npos || field[0] == ' ' || field[0] == '\t' ||
        field[colon - 1] == ' ' || field[colon - 1] == '\t' ||
        field.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
      refuse(400, "Bad Request", "malformed header field\n");
      return false;
    }
    std::string_view name = field.substr(0, colon);
    std::string_view value = trim(field.substr(colon + 1));
    if (equalsIgnoreCase(name, "connection")) {
      if (hasToken(value, "close")) keep_alive = false;
      if (hasToken(value, "keep-alive") && version == "HTTP/1.0") keep_alive = true;
    } else if (equalsIgnoreCase(name, "transfer-encoding") ||
               (equalsIgnoreCase(name, "content-length") && value != "0")) {
      // Admin endpoints take no body; reading one would need its own limits.
      refuse(400, "Bad Request", "admin requests take no body\n");
      return false;
    }
  }
  const bool head_only = method == "HEAD";
  // POST only for the actions (e.g. /drain), without a body (refused above).
  if (method != "GET" && !head_only && method != "POST") {
    stats_.parse_errors.inc();
    writeResponse(405, "text/plain; charset=utf-8", "only GET, HEAD and POST\n", false, true,
                  "Allow: GET, HEAD, POST\r\n");
    return false;
  }
  std::string path(target.substr(0, target.find('?')));
  AdminResponse response = owner_.respond(method, path);
  if (response.status == 405) {
    // A method the path does not take: counted with the other refusals, then close.
    stats_.parse_errors.inc();
    writeResponse(405, response.content_type, response.body, head_only, true,
                  "Allow: " + owner_.allowedMethods(path) + "\r\n");
    return false;
  }
  writeResponse(response.status, response.content_type, response.body, head_only, !keep_alive,
                version == "HTTP/1.0" && keep_alive ? "Connection: keep-alive\r\n" : "");
  return keep_alive;
}

void AdminConnection::refuse(int status, std::string_view, std::string_view body) {
  stats_.parse_errors.inc();
  writeResponse(status, "text/plain; charset=utf-8", std::string(body), false, true);
}

void AdminConnection::writeResponse(int status, const std::string& content_type,
                                    const std::string& body, bool head_only, bool close_after,
                                    std::string_view extra_headers) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " +
                    std::string(reasonPhrase(status)) + "\r\nContent-Type: " + content_type +
                    "\r\nCache-Control: no-store\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n";
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
  if (!served_any_ || !connection_->input().empty()) {
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
  if (!served_any_ && connection_->input().empty()) {
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
