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

int msLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

HttpClient& self(llhttp_t* p) { return *static_cast<HttpClient*>(p->data); }

std::string sslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    out.append(out.empty() ? "" : "; ").append(buf);
  }
  return out.empty() ? "no OpenSSL error" : out;
}

// Waits for what SSL_get_error() asked for; false at the deadline.
bool waitForTls(int fd, int ssl_error, Clock::time_point deadline) {
  pollfd pfd{fd, static_cast<short>(ssl_error == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN), 0};
  return poll(&pfd, 1, msLeft(deadline)) == 1;
}

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
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) return internalError("socket failed");
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) != 0) {
    if (errno != EINPROGRESS) {
      close();
      return unavailable(std::string("connect: ") + strerror(errno));
    }
    pollfd pfd{fd_, POLLOUT, 0};
    if (poll(&pfd, 1, static_cast<int>(timeout.count())) != 1) {
      close();
      return unavailable("connect timed out");
    }
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      close();
      return unavailable(std::string("connect: ") + strerror(err));
    }
  }
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
  ssl_ctx_ = SSL_CTX_new(TLS_client_method());
  if (ssl_ctx_ == nullptr) return internalError("SSL_CTX_new: " + sslErrors());
  SSL_CTX_set_min_proto_version(ssl_ctx_, TLS1_2_VERSION);
  SSL_CTX_set_verify(ssl_ctx_, SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_load_verify_locations(ssl_ctx_, tls_->ca_file.c_str(), nullptr) != 1) {
    return invalidArgument("ca_file " + tls_->ca_file + ": " + sslErrors());
  }
  if (!tls_->cert_file.empty() &&
      (SSL_CTX_use_certificate_chain_file(ssl_ctx_, tls_->cert_file.c_str()) != 1 ||
       SSL_CTX_use_PrivateKey_file(ssl_ctx_, tls_->key_file.c_str(), SSL_FILETYPE_PEM) != 1)) {
    return invalidArgument("client certificate " + tls_->cert_file + ": " + sslErrors());
  }
  static const unsigned char kAlpn[] = "\x08http/1.1";
  SSL_CTX_set_alpn_protos(ssl_ctx_, kAlpn, sizeof(kAlpn) - 1);
  // send() may retry a partial write from a moved buffer (it advances a string_view).
  SSL_CTX_set_mode(ssl_ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  ssl_ = SSL_new(ssl_ctx_);
  SSL_set_fd(ssl_, fd_);
  if (tls_->server_name.empty()) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
  } else {
    SSL_set_tlsext_host_name(ssl_, tls_->server_name.c_str());
    SSL_set1_host(ssl_, tls_->server_name.c_str());
  }
  while (true) {
    ERR_clear_error();
    const int rc = SSL_connect(ssl_);
    if (rc == 1) return Status::ok();
    const int err = SSL_get_error(ssl_, rc);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
      const long verify = SSL_get_verify_result(ssl_);
      return unavailable("TLS handshake: " + sslErrors() +
                         (verify != X509_V_OK
                              ? std::string("; verify: ") + X509_verify_cert_error_string(verify)
                              : ""));
    }
    if (!waitForTls(fd_, err, deadline)) return unavailable("TLS handshake timed out");
  }
}

void HttpClient::close() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // no close_notify: tests close like a client that left
  if (ssl_ctx_ != nullptr) SSL_CTX_free(ssl_ctx_);
  ssl_ = nullptr;
  ssl_ctx_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status HttpClient::send(std::string_view bytes, Ms timeout) {
  if (fd_ < 0) return unavailable("not connected");
  const auto deadline = Clock::now() + timeout;
  while (!bytes.empty() && ssl_ != nullptr) {
    ERR_clear_error();
    const int n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    const int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      if (!waitForTls(fd_, err, deadline)) return unavailable("send timed out");
      continue;
    }
    if (err == SSL_ERROR_SYSCALL && errno == ECONNRESET) reset_ = true;
    return unavailable("TLS send: " + sslErrors());
  }
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd_, POLLOUT, 0};
      if (poll(&pfd, 1, msLeft(deadline)) != 1) return unavailable("send timed out");
      continue;
    }
    if (errno == ECONNRESET) reset_ = true;
    return unavailable(std::string("send: ") + strerror(errno));
  }
  return Status::ok();
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
