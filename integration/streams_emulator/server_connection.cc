#include "integration/streams_emulator/server_connection.h"

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

namespace ferry::streams {
namespace {

uint64_t nextConnectionId() {
  static uint64_t next = 1;
  return next++;
}

const char* reasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Content Too Large";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

ServerConnection& self(llhttp_t* p) { return *static_cast<ServerConnection*>(p->data); }

// Lingering close: after the answer, keep reading (and dropping) what the client still sends
// for a while before closing, so the kernel does not turn unread input into an RST that could
// destroy the answer before the client read it (the same thing nginx and Apache do).
constexpr int kLingerSeconds = 5;

}  // namespace

ServerConnection::ServerConnection(event_base* base, int fd, ConnectionCallbacks& callbacks,
                                   const std::string& origin, size_t body_limit, SSL* ssl)
    : base_(base),
      callbacks_(callbacks),
      origin_(origin),
      body_limit_(body_limit),
      id_(nextConnectionId()) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  evutil_make_socket_nonblocking(fd);
  if (ssl != nullptr) {
    // libevent's OpenSSL bufferevent: handshake, records, and SSL_free on free.
    bev_ = bufferevent_openssl_socket_new(base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                          BEV_OPT_CLOSE_ON_FREE);
    bufferevent_openssl_set_allow_dirty_shutdown(bev_, 1);
  } else {
    bev_ = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
  }
  bufferevent_setcb(bev_, &ServerConnection::onReadCb, &ServerConnection::onWriteCb,
                    &ServerConnection::onEventCb, this);
  bufferevent_enable(bev_, EV_READ | EV_WRITE);

  llhttp_settings_init(&settings_);
  settings_.on_message_begin = &ServerConnection::onMessageBegin;
  settings_.on_url = &ServerConnection::onUrl;
  settings_.on_header_field = &ServerConnection::onHeaderField;
  settings_.on_header_value = &ServerConnection::onHeaderValue;
  settings_.on_headers_complete = &ServerConnection::onHeadersComplete;
  settings_.on_body = &ServerConnection::onBody;
  settings_.on_message_complete = &ServerConnection::onMessageComplete;
  llhttp_init(&parser_, HTTP_REQUEST, &settings_);
  parser_.data = this;
  timer_ = evtimer_new(base, &ServerConnection::onTimerCb, this);
  resume_event_ = event_new(base, -1, 0, &ServerConnection::onResumeCb, this);
}

ServerConnection::~ServerConnection() {
  if (timer_) event_free(timer_);
  if (linger_timer_) event_free(linger_timer_);
  if (resume_event_) event_free(resume_event_);
  if (bev_) bufferevent_free(bev_);
}

// ---- llhttp callbacks: record what was parsed; processInput() acts on it. ----

int ServerConnection::onMessageBegin(llhttp_t* p) {
  ServerConnection& c = self(p);
  c.request_.clear();
  c.in_field_ = false;
  c.body_trigger_ = 0;
  c.body_trigger_fired_ = false;
  return 0;
}

int ServerConnection::onUrl(llhttp_t* p, const char* at, size_t len) {
  self(p).request_.url.append(at, len);
  return 0;
}

int ServerConnection::onHeaderField(llhttp_t* p, const char* at, size_t len) {
  ServerConnection& c = self(p);
  HttpRequest& r = c.request_;
  if (!c.in_field_) {  // a new header starts
    if (r.header_count == r.headers.size()) r.headers.emplace_back();
    auto& h = r.headers[r.header_count++];
    h.first.clear();
    h.second.clear();
    c.in_field_ = true;
  }
  auto& name = r.headers[r.header_count - 1].first;
  for (size_t i = 0; i < len; ++i) {
    name.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(at[i]))));
  }
  return 0;
}

int ServerConnection::onHeaderValue(llhttp_t* p, const char* at, size_t len) {
  ServerConnection& c = self(p);
  c.in_field_ = false;
  if (c.request_.header_count > 0) {
    c.request_.headers[c.request_.header_count - 1].second.append(at, len);
  }
  return 0;
}

int ServerConnection::onHeadersComplete(llhttp_t* p) {
  ServerConnection& c = self(p);
  c.request_.method = llhttp_method_name(static_cast<llhttp_method_t>(p->method));
  c.request_.head_request = p->method == HTTP_HEAD;
  c.request_.keep_alive = llhttp_should_keep_alive(p);
  // The callee sees the head before any body byte is read. Provisionally "responding" with an
  // unread body: if it answers now, the connection closes after the answer (lingering close).
  c.responding_ = true;
  c.body_unread_ = true;
  const bool answered = c.callbacks_.onRequestHead(c, c.request_);
  if (c.closed_ || answered) {
    c.stopped_ = true;
    return HPE_PAUSED;
  }
  c.responding_ = false;
  c.body_unread_ = false;
  return 0;
}

int ServerConnection::onBody(llhttp_t* p, const char* at, size_t len) {
  ServerConnection& c = self(p);
  c.request_.body_bytes_seen += len;
  if (c.request_.body_bytes_seen > c.body_limit_) {
    c.too_large_ = true;
    return HPE_USER;
  }
  c.request_.body.append(at, len);
  if (c.body_trigger_ > 0 && !c.body_trigger_fired_ &&
      c.request_.body_bytes_seen >= c.body_trigger_) {
    c.body_trigger_fired_ = true;
    c.responding_ = true;
    c.body_unread_ = true;
    const bool answered = c.callbacks_.onBodyTrigger(c, c.request_);
    if (c.closed_ || answered) {
      c.stopped_ = true;
      return HPE_USER;
    }
    c.responding_ = false;
    c.body_unread_ = false;
  }
  return 0;
}

int ServerConnection::onMessageComplete(llhttp_t* p) {
  ServerConnection& c = self(p);
  c.message_done_ = true;
  return HPE_PAUSED;
}

// ---- Input ----

void ServerConnection::onReadCb(bufferevent*, void* ctx) {
  static_cast<ServerConnection*>(ctx)->processInput();
}

void ServerConnection::processInput() {
  if (processing_ || closed_) return;
  processing_ = true;
  while (!closed_) {
    evbuffer* in = bufferevent_get_input(bev_);
    if (lingering_ || stopped_) {  // answered early: drop whatever the client still sends
      evbuffer_drain(in, evbuffer_get_length(in));
      break;
    }
    if (responding_ || closing_) break;
    evbuffer_iovec vec;
    if (evbuffer_peek(in, -1, nullptr, &vec, 1) < 1 || vec.iov_len == 0) break;
    const char* data = static_cast<const char*>(vec.iov_base);
    const llhttp_errno_t err = llhttp_execute(&parser_, data, vec.iov_len);
    if (closed_) break;  // a callback closed the connection (e.g. the reset knob)
    size_t consumed = vec.iov_len;
    if (err != HPE_OK) consumed = llhttp_get_error_pos(&parser_) - data;
    evbuffer_drain(in, consumed);
    if (stopped_) continue;  // answered at the head or at the body trigger

    if (err == HPE_PAUSED && message_done_) {
      llhttp_resume(&parser_);
      message_done_ = false;
      responding_ = true;
      if (!request_.keep_alive) close_after_response_ = true;
      callbacks_.onRequestComplete(*this, request_);
      continue;
    }
    if (err != HPE_OK) {
      responding_ = true;
      body_unread_ = true;
      stopped_ = true;
      if (too_large_) {
        callbacks_.onBodyTooLarge(*this, request_);
      } else {
        // Malformed request (RFC 9112 section 2.2 allows answering 400 and closing).
        sendResponse(400, {HeaderRef{"content-type", "application/json"}},
                     R"({"error":{"code":"bad_request","message":"malformed HTTP request"}})");
      }
      break;
    }
  }
  processing_ = false;
}

// ---- Output ----

void ServerConnection::writeHead(int status, std::span<const HeaderRef> headers,
                                 const char* framing, uint64_t content_length) {
  cancelTimer();
  head_.clear();
  head_.append("HTTP/1.1 ");
  head_.append(std::to_string(status));
  head_.push_back(' ');
  head_.append(reasonPhrase(status));
  head_.append("\r\nprisma-streams-origin: ");
  head_.append(origin_);
  head_.append("\r\n");
  for (const HeaderRef& h : headers) {
    head_.append(h.name);
    head_.append(": ");
    head_.append(h.value);
    head_.append("\r\n");
  }
  if (framing != nullptr) {
    head_.append(framing);
    if (content_length != UINT64_MAX) head_.append(std::to_string(content_length));
    head_.append("\r\n");
  }
  if (close_after_response_ || body_unread_) head_.append("connection: close\r\n");
  head_.append("\r\n");
  evbuffer_add(bufferevent_get_output(bev_), head_.data(), head_.size());
  body_sent_ = 0;
  callbacks_.onResponseStarted(*this, request_, status);
}

void ServerConnection::writeBody(std::string_view data) {
  if (closing_ || closed_) return;
  if (cut_after_ != UINT64_MAX && body_sent_ + data.size() >= cut_after_) {
    const uint64_t keep = cut_after_ - body_sent_;
    evbuffer_add(bufferevent_get_output(bev_), data.data(), keep);
    body_sent_ += keep;
    // The cut: flush what we have and close without finishing the message.
    close_after_response_ = true;
    body_unread_ = false;
    closing_ = true;
    bufferevent_disable(bev_, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(bev_)) == 0) closeInternal(true);
    return;
  }
  evbuffer_add(bufferevent_get_output(bev_), data.data(), data.size());
  body_sent_ += data.size();
}

void ServerConnection::sendResponse(int status, std::span<const HeaderRef> headers,
                                    std::string_view body) {
  if (closed_) return;
  const bool no_body = status == 204 || status == 304 || (status >= 100 && status < 200);
  if (no_body) {
    writeHead(status, headers, nullptr, 0);
  } else {
    writeHead(status, headers, "content-length: ", request_.head_request ? 0 : body.size());
    if (!request_.head_request && !body.empty()) writeBody(body);
  }
  if (closing_ || closed_) return;  // cut
  if (cut_after_ != UINT64_MAX && (no_body || body.empty() || request_.head_request)) {
    // Nothing to cut inside: still close, as the knob promises a broken exchange.
    close_after_response_ = true;
  }
  finishResponse();
}

void ServerConnection::startChunked(int status, std::span<const HeaderRef> headers) {
  if (closed_) return;
  chunked_ = true;
  writeHead(status, headers, "transfer-encoding: chunked", UINT64_MAX);
}

void ServerConnection::sendChunk(std::string_view data) {
  if (closed_ || closing_ || !chunked_ || data.empty()) return;
  char size_line[24];
  const int n = snprintf(size_line, sizeof(size_line), "%zx\r\n", data.size());
  writeBody(std::string_view(size_line, n));
  writeBody(data);
  writeBody("\r\n");
}

void ServerConnection::endChunked() {
  if (closed_ || closing_ || !chunked_) return;
  writeBody("0\r\n\r\n");
  if (closing_ || closed_) return;
  chunked_ = false;
  finishResponse();
}

void ServerConnection::finishResponse() {
  cancelTimer();
  cut_after_ = UINT64_MAX;
  if (close_after_response_ || body_unread_) {
    closing_ = true;
    if (evbuffer_get_length(bufferevent_get_output(bev_)) == 0) onWriteCb(bev_, this);
    return;
  }
  responding_ = false;
  // Parse the next pipelined request, if any. Inside processInput() its loop does it; after an
  // asynchronous response (timer, append notification) it runs from the loop, so that the
  // caller finishes before another request can change the store under it.
  if (!processing_ && evbuffer_get_length(bufferevent_get_input(bev_)) > 0) {
    event_active(resume_event_, 0, 0);
  }
}

void ServerConnection::onResumeCb(evutil_socket_t, short, void* ctx) {
  static_cast<ServerConnection*>(ctx)->processInput();
}

void ServerConnection::onWriteCb(bufferevent*, void* ctx) {
  auto* c = static_cast<ServerConnection*>(ctx);
  if (!c->closing_ || c->closed_) return;
  if (c->body_unread_) {
    c->startLingeringClose();
  } else {
    c->closeInternal(true);
  }
}

void ServerConnection::startLingeringClose() {
  if (lingering_ || closed_) return;
  lingering_ = true;
  closing_ = false;
  shutdown(bufferevent_getfd(bev_), SHUT_WR);
  linger_timer_ = evtimer_new(base_, &ServerConnection::onLingerCb, this);
  timeval tv{kLingerSeconds, 0};
  evtimer_add(linger_timer_, &tv);
  bufferevent_enable(bev_, EV_READ);
  evbuffer* in = bufferevent_get_input(bev_);
  evbuffer_drain(in, evbuffer_get_length(in));
}

void ServerConnection::onLingerCb(evutil_socket_t, short, void* ctx) {
  static_cast<ServerConnection*>(ctx)->closeInternal(true);
}

// After a failed TLS handshake the alert is on its way; closing at once with the client's
// request unread would turn into an RST that can destroy the alert before the client reads it
// (TLS 1.3 clients write their request before the server checked their certificate). Keep a
// duplicate of the socket, half-closed, reading and dropping input until EOF or kLingerSeconds.
static void lingerAfterTlsError(event_base* base, int fd) {
  struct Drain {
    static void onReadable(evutil_socket_t fd, short what, void* arg) {
      char buf[4096];
      ssize_t n = 0;
      if (what & EV_READ) {
        while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
        }
      }
      if ((what & EV_TIMEOUT) || n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close(fd);
        return;
      }
      timeval tv{kLingerSeconds, 0};
      event_base_once(static_cast<event_base*>(arg), fd, EV_READ, &Drain::onReadable, arg, &tv);
    }
  };
  const int dup_fd = dup(fd);
  if (dup_fd < 0) return;
  shutdown(dup_fd, SHUT_WR);
  timeval tv{kLingerSeconds, 0};
  event_base_once(base, dup_fd, EV_READ, &Drain::onReadable, base, &tv);
}

void ServerConnection::onEventCb(bufferevent*, short what, void* ctx) {
  auto* c = static_cast<ServerConnection*>(ctx);
  if ((what & BEV_EVENT_ERROR) && bufferevent_openssl_get_ssl(c->bev_) != nullptr) {
    lingerAfterTlsError(c->base_, bufferevent_getfd(c->bev_));
  }
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) c->closeInternal(true);
}

void ServerConnection::resetNow() {
  if (closed_) return;
  linger lg{1, 0};
  setsockopt(bufferevent_getfd(bev_), SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  resetting_ = true;
  closeInternal(true);
}

void ServerConnection::closeNow() { closeInternal(true); }

void ServerConnection::closeInternal(bool notify) {
  if (closed_) return;
  closed_ = true;
  cancelTimer();
  if (linger_timer_) event_del(linger_timer_);
  event_del(resume_event_);
  bufferevent_disable(bev_, EV_READ | EV_WRITE);
  // HTTPS: a clean close sends close_notify (best-effort, never waits); resetNow() does not.
  if (SSL* ssl = bufferevent_openssl_get_ssl(bev_); ssl != nullptr && notify && !resetting_) {
    SSL_shutdown(ssl);
  }
  // Close the socket now; the object itself is destroyed later by the server.
  bufferevent_free(bev_);
  bev_ = nullptr;
  if (notify) callbacks_.onConnectionClosed(*this);
}

// ---- Timer ----

void ServerConnection::setTimer(uint64_t ms, std::function<void()> callback) {
  if (closed_) return;
  timer_cb_ = std::move(callback);
  timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
  evtimer_add(timer_, &tv);
}

void ServerConnection::cancelTimer() {
  if (timer_) evtimer_del(timer_);
}

void ServerConnection::onTimerCb(evutil_socket_t, short, void* ctx) {
  auto* c = static_cast<ServerConnection*>(ctx);
  if (c->closed_) return;
  // Move out first: the callback may re-arm the timer with a new callback.
  std::function<void()> cb = std::move(c->timer_cb_);
  if (cb) cb();
}

}  // namespace ferry::streams
