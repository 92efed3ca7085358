#include "integration/harness/client_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ferry::testing {
namespace {

using Clock = ClientTransport::Clock;

int msLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

bool waitFor(int fd, short events, Clock::time_point deadline) {
  pollfd pfd{fd, events, 0};
  while (true) {
    const int n = poll(&pfd, 1, msLeft(deadline));
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

std::string sslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    out.append(out.empty() ? "" : "; ").append(buf);
  }
  return out.empty() ? "no OpenSSL error" : out;
}

}  // namespace

Status ClientTransport::connect(uint16_t port, const ClientTls* tls, std::string_view alpn,
                                Clock::time_point deadline) {
  close();
  reset_ = false;
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) return internalError("socket failed");
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) != 0) {
    if (errno != EINPROGRESS) {
      const std::string why = strerror(errno);
      close();
      return unavailable("connect: " + why);
    }
    if (!waitFor(fd_, POLLOUT, deadline)) {
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
  if (tls != nullptr) {
    Status s = handshake(*tls, alpn, deadline);
    if (!s.isOk()) {
      close();
      return s;
    }
  }
  return Status::ok();
}

Status ClientTransport::handshake(const ClientTls& tls, std::string_view alpn,
                                  Clock::time_point deadline) {
  ssl_ctx_ = SSL_CTX_new(TLS_client_method());
  if (ssl_ctx_ == nullptr) return internalError("SSL_CTX_new: " + sslErrors());
  // RFC 9113 section 9.2: HTTP/2 over TLS is TLS 1.2 or later.
  SSL_CTX_set_min_proto_version(ssl_ctx_, TLS1_2_VERSION);
  SSL_CTX_set_verify(ssl_ctx_, SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_load_verify_locations(ssl_ctx_, tls.ca_file.c_str(), nullptr) != 1) {
    return invalidArgument("ca_file " + tls.ca_file + ": " + sslErrors());
  }
  if (!tls.cert_file.empty() &&
      (SSL_CTX_use_certificate_chain_file(ssl_ctx_, tls.cert_file.c_str()) != 1 ||
       SSL_CTX_use_PrivateKey_file(ssl_ctx_, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1)) {
    return invalidArgument("client certificate " + tls.cert_file + ": " + sslErrors());
  }
  if (!alpn.empty()) {
    SSL_CTX_set_alpn_protos(ssl_ctx_, reinterpret_cast<const unsigned char*>(alpn.data()),
                            static_cast<unsigned>(alpn.size()));
  }
  SSL_CTX_set_mode(ssl_ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  ssl_ = SSL_new(ssl_ctx_);
  SSL_set_fd(ssl_, fd_);
  if (tls.server_name.empty()) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
  } else {
    SSL_set_tlsext_host_name(ssl_, tls.server_name.c_str());
    SSL_set1_host(ssl_, tls.server_name.c_str());
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
    if (!waitFor(fd_, err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, deadline)) {
      return unavailable("TLS handshake timed out");
    }
  }
}

std::string ClientTransport::alpnSelected() const {
  if (ssl_ == nullptr) return "";
  const unsigned char* p = nullptr;
  unsigned len = 0;
  SSL_get0_alpn_selected(ssl_, &p, &len);
  return p == nullptr ? "" : std::string(reinterpret_cast<const char*>(p), len);
}

void ClientTransport::close() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // no close_notify: tests close like a client that left
  if (ssl_ctx_ != nullptr) SSL_CTX_free(ssl_ctx_);
  ssl_ = nullptr;
  ssl_ctx_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status ClientTransport::writeAll(std::string_view bytes, Clock::time_point deadline) {
  if (fd_ < 0) return unavailable("not connected");
  while (!bytes.empty()) {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
      if (n > 0) {
        bytes.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      const int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        if (!waitFor(fd_, err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, deadline)) {
          return unavailable("send timed out");
        }
        continue;
      }
      if (err == SSL_ERROR_SYSCALL && errno == ECONNRESET) reset_ = true;
      return unavailable("TLS send: " + sslErrors());
    }
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitFor(fd_, POLLOUT, deadline)) return unavailable("send timed out");
      continue;
    }
    if (errno == ECONNRESET) reset_ = true;
    return unavailable(std::string("send: ") + strerror(errno));
  }
  return Status::ok();
}

ClientTransport::Read ClientTransport::readSome(std::string& out, Clock::time_point deadline) {
  if (fd_ < 0) return Read::kEnd;
  char buf[16384];
  while (true) {
    if ((ssl_ == nullptr || SSL_pending(ssl_) == 0) && !waitFor(fd_, POLLIN, deadline)) {
      return Read::kTimeout;
    }
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int n = SSL_read(ssl_, buf, sizeof(buf));
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
        return Read::kData;
      }
      const int err = SSL_get_error(ssl_, n);
      // Records without application data (e.g. session tickets): wait for more.
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) continue;
      if (err == SSL_ERROR_SYSCALL && errno == ECONNRESET) reset_ = true;
      return Read::kEnd;
    }
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      return Read::kData;
    }
    if (n == 0) return Read::kEnd;
    if (errno == EINTR || errno == EAGAIN) continue;
    if (errno == ECONNRESET) reset_ = true;
    return Read::kEnd;
  }
}

}  // namespace ferry::testing
