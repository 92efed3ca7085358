#include "integration/harness/http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "integration/harness/client_socket.h"

namespace ferry::testing {
namespace {

using Clock = std::chrono::steady_clock;

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

using client_socket::msLeft;

HttpClient& self(llhttp_t* p) { return *static_cast<HttpClient*>(p->data); }

}  // namespace

const std::string* HttpResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (equalsIgnoreCase(k, name)) return &v;
  }
  return nullptr;
}

std::string HttpResponse::headerOr(std::string_view name, std::string fallback) const {
  const std::string* v = header(name);
  return v ? *v : fallback;
}

HttpClient::HttpClient() {
  llhttp_settings_init(&settings_);
  settings_.on_header_field = &HttpClient::onHeaderField;
  settings_.on_header_value = &HttpClient::onHeaderValue;
  settings_.on_headers_complete = &HttpClient::onHeadersComplete;
  settings_.on_body = &HttpClient::onBody;
  settings_.on_message_complete = &HttpClient::onMessageComplete;
  llhttp_init(&parser_, HTTP_RESPONSE, &settings_);
  parser_.data = this;
}

HttpClient::~HttpClient() { close(); }

Status HttpClient::connect(uint16_t port, Ms timeout) {
  close();
  auto fd = client_socket::connectLoopback(port, Clock::now() + timeout);
  if (!fd.isOk()) return fd.status();
  fd_ = *fd;
  port_ = port;
  if (tls_) {
    Status s = handshake(Clock::now() + timeout);
    if (!s.isOk()) {
      close();
      return s;
    }
  }
  raw_.clear();
  eof_ = reset_ = false;
  in_response_ = false;
  llhttp_init(&parser_, HTTP_RESPONSE, &settings_);
  parser_.data = this;
  return Status::ok();
}

Status HttpClient::handshake(Clock::time_point deadline) {
  client_socket::TlsSession session;
  Status s =
      client_socket::startTls(fd_, *tls_, std::string_view("\x08http/1.1", 9), deadline, session);
  ssl_ctx_ = session.ctx;
  ssl_ = session.ssl;
  return s;
}

void HttpClient::close() {
  client_socket::TlsSession{ssl_ctx_, ssl_}.free();
  ssl_ = nullptr;
  ssl_ctx_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status HttpClient::send(std::string_view bytes, Ms timeout) {
  if (fd_ < 0) return unavailable("not connected");
  return client_socket::writeAll(fd_, ssl_, bytes, Clock::now() + timeout, &reset_);
}

std::string HttpClient::buildRequest(std::string_view method, std::string_view path,
                                     const Headers& headers, std::string_view body) const {
  std::string out;
  out.append(method).append(" ").append(path).append(" HTTP/1.1\r\n");
  bool has_host = false, has_length = false;
  for (const auto& [k, v] : headers) {
    if (equalsIgnoreCase(k, "host")) has_host = true;
    if (equalsIgnoreCase(k, "content-length") || equalsIgnoreCase(k, "transfer-encoding")) {
      has_length = true;
    }
  }
  if (!has_host) out.append("host: 127.0.0.1:").append(std::to_string(port_)).append("\r\n");
  for (const auto& [k, v] : headers) out.append(k).append(": ").append(v).append("\r\n");
  if (!has_length && (!body.empty() || method == "POST" || method == "PUT")) {
    out.append("content-length: ").append(std::to_string(body.size())).append("\r\n");
  }
  out.append("\r\n").append(body);
  return out;
}

Status HttpClient::sendRequest(std::string_view method, std::string_view path,
                               const Headers& headers, std::string_view body) {
  expect_head_response_ = method == "HEAD";
  return send(buildRequest(method, path, headers, body));
}

// ---- llhttp callbacks ----

int HttpClient::onHeaderField(llhttp_t* p, const char* at, size_t len) {
  HttpClient& c = self(p);
  if (!c.in_field_) c.current_.headers.emplace_back();
  c.in_field_ = true;
  for (size_t i = 0; i < len; ++i) {
    c.current_.headers.back().first.push_back(
        static_cast<char>(std::tolower(static_cast<unsigned char>(at[i]))));
  }
  return 0;
}

int HttpClient::onHeaderValue(llhttp_t* p, const char* at, size_t len) {
  HttpClient& c = self(p);
  c.in_field_ = false;
  if (!c.current_.headers.empty()) c.current_.headers.back().second.append(at, len);
  return 0;
}

int HttpClient::onHeadersComplete(llhttp_t* p) {
  HttpClient& c = self(p);
  c.current_.status = p->status_code;
  c.head_done_ = true;
  // A response to HEAD has no body whatever its headers say (RFC 9110 section 9.3.2).
  return c.expect_head_response_ ? 1 : 0;
}

int HttpClient::onBody(llhttp_t* p, const char* at, size_t len) {
  self(p).current_.body.append(at, len);
  return 0;
}

int HttpClient::onMessageComplete(llhttp_t* p) {
  self(p).current_.complete = true;
  // Stop here: bytes after this message belong to the next response.
  return HPE_PAUSED;
}

// ---- Reading ----

void HttpClient::beginResponse() {
  current_ = HttpResponse{};
  head_done_ = false;
  in_field_ = false;
  body_returned_ = 0;
  in_response_ = true;
  if (llhttp_get_errno(&parser_) == HPE_PAUSED) llhttp_resume(&parser_);
}

bool HttpClient::parseBuffered(Status& error) {
  if (raw_.empty() || current_.complete) return true;
  const llhttp_errno_t err = llhttp_execute(&parser_, raw_.data(), raw_.size());
  size_t consumed = raw_.size();
  if (err == HPE_PAUSED) {
    consumed = llhttp_get_error_pos(&parser_) - raw_.data();
  } else if (err != HPE_OK) {
    error =
        protocolError(std::string("response parse error: ") + llhttp_get_error_reason(&parser_));
    return false;
  }
  raw_.erase(0, consumed);
  return true;
}

bool HttpClient::fill(Clock::time_point deadline) {
  if (fd_ < 0 || eof_) return false;
  if (ssl_ == nullptr || SSL_pending(ssl_) == 0) {
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = poll(&pfd, 1, msLeft(deadline));
    if (ready != 1) return false;
  }
  readOnce();
  return true;
}

void HttpClient::readOnce() {
  char buf[16384];
  if (ssl_ != nullptr) {
    ERR_clear_error();
    const int n = SSL_read(ssl_, buf, sizeof(buf));
    if (n > 0) {
      raw_.append(buf, static_cast<size_t>(n));
      return;
    }
    const int err = SSL_get_error(ssl_, n);
    // WANT_READ: only TLS records without application data came (e.g. session tickets).
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return;
    if (err == SSL_ERROR_SYSCALL && errno == ECONNRESET) reset_ = true;
    eof_ = true;  // close_notify, EOF without it, or a TLS error: the stream ended
    return;
  }
  const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
  if (n > 0) {
    raw_.append(buf, static_cast<size_t>(n));
  } else if (n == 0) {
    eof_ = true;
  } else if (errno != EINTR && errno != EAGAIN) {
    if (errno == ECONNRESET) reset_ = true;
    eof_ = true;
  }
}

template <typename Done>
Status HttpClient::readUntil(Done done, Ms timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    Status error;
    if (!parseBuffered(error)) return error;
    if (done()) return Status::ok();
    if (eof_) {
      if (!current_.complete && llhttp_finish(&parser_) == HPE_OK && head_done_) {
        // A close-delimited body ends here (RFC 9112 section 6.3, rule 8).
        current_.complete = true;
      }
      if (done()) return Status::ok();
      return unavailable(reset_ ? "connection reset by peer before the response ended"
                                : "connection closed before the response ended");
    }
    if (!fill(deadline)) {
      if (eof_) continue;
      return unavailable("timed out waiting for the response");
    }
  }
}

StatusOr<HttpResponse> HttpClient::readResponse(Ms timeout) {
  if (!in_response_) beginResponse();
  Status s = readUntil([this] { return current_.complete; }, timeout);
  if (!s.isOk()) return s;
  in_response_ = false;
  return current_;
}

StatusOr<HttpResponse> HttpClient::readResponseHead(Ms timeout) {
  if (!in_response_) beginResponse();
  Status s = readUntil([this] { return head_done_; }, timeout);
  if (!s.isOk()) return s;
  return current_;
}

StatusOr<std::string> HttpClient::readBodyUntil(std::string_view needle, Ms timeout) {
  if (!in_response_) beginResponse();
  size_t found = std::string::npos;
  Status s = readUntil(
      [&] {
        found = current_.body.find(needle, body_returned_);
        return found != std::string::npos || current_.complete;
      },
      timeout);
  if (!s.isOk()) return s;
  if (found == std::string::npos) return unavailable("response ended before the expected bytes");
  const size_t end = found + needle.size();
  std::string out = current_.body.substr(body_returned_, end - body_returned_);
  body_returned_ = end;
  if (current_.complete && body_returned_ == current_.body.size()) in_response_ = false;
  return out;
}

std::string HttpClient::readSome(Ms timeout) {
  if (raw_.empty()) fill(Clock::now() + timeout);
  std::string out;
  out.swap(raw_);
  return out;
}

bool HttpClient::isClosedByPeer(Ms timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!eof_) {
    if (!fill(deadline)) return eof_;
  }
  return true;
}

StatusOr<HttpResponse> httpRequest(uint16_t port, std::string_view method, std::string_view path,
                                   const Headers& headers, std::string_view body,
                                   std::chrono::milliseconds timeout, const ClientTls* tls) {
  HttpClient client;
  if (tls != nullptr) client.setTls(*tls);
  Status s = client.connect(port, timeout);
  if (!s.isOk()) return s;
  s = client.sendRequest(method, path, headers, body);
  if (!s.isOk()) return s;
  return client.readResponse(timeout);
}

}  // namespace ferry::testing
