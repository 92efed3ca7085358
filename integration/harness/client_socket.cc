#include "integration/harness/client_socket.h"

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

namespace ferry::testing::client_socket {

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

StatusOr<int> connectLoopback(uint16_t port, Clock::time_point deadline) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return internalError("socket failed");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) != 0) {
    if (errno != EINPROGRESS) {
      const std::string why = strerror(errno);
      ::close(fd);
      return unavailable("connect: " + why);
    }
    if (!waitFor(fd, POLLOUT, deadline)) {
      ::close(fd);
      return unavailable("connect timed out");
    }
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      ::close(fd);
      return unavailable(std::string("connect: ") + strerror(err));
    }
  }
  return fd;
}

void TlsSession::free() {
  if (ssl != nullptr) SSL_free(ssl);
  if (ctx != nullptr) SSL_CTX_free(ctx);
  ssl = nullptr;
  ctx = nullptr;
}

Status startTls(int fd, const ClientTls& tls, std::string_view alpn, Clock::time_point deadline,
                TlsSession& session) {
  session.ctx = SSL_CTX_new(TLS_client_method());
  if (session.ctx == nullptr) return internalError("SSL_CTX_new: " + sslErrors());
  // TLS 1.2 or later (RFC 9113 section 9.2 for HTTP/2; ferry's listener takes nothing older).
  SSL_CTX_set_min_proto_version(session.ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(session.ctx, SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_load_verify_locations(session.ctx, tls.ca_file.c_str(), nullptr) != 1) {
    return invalidArgument("ca_file " + tls.ca_file + ": " + sslErrors());
  }
  if (!tls.cert_file.empty() &&
      (SSL_CTX_use_certificate_chain_file(session.ctx, tls.cert_file.c_str()) != 1 ||
       SSL_CTX_use_PrivateKey_file(session.ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1)) {
    return invalidArgument("client certificate " + tls.cert_file + ": " + sslErrors());
  }
  if (!alpn.empty()) {
    SSL_CTX_set_alpn_protos(session.ctx, reinterpret_cast<const unsigned char*>(alpn.data()),
                            static_cast<unsigned>(alpn.size()));
  }
  // A partial write is retried from a moved buffer (writeAll advances a string_view).
  SSL_CTX_set_mode(session.ctx,
                   SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  session.ssl = SSL_new(session.ctx);
  SSL_set_fd(session.ssl, fd);
  if (tls.server_name.empty()) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(session.ssl), "127.0.0.1");
  } else {
    SSL_set_tlsext_host_name(session.ssl, tls.server_name.c_str());
    SSL_set1_host(session.ssl, tls.server_name.c_str());
  }
  while (true) {
    ERR_clear_error();
    const int rc = SSL_connect(session.ssl);
    if (rc == 1) return Status::ok();
    const int err = SSL_get_error(session.ssl, rc);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
      const long verify = SSL_get_verify_result(session.ssl);
      return unavailable("TLS handshake: " + sslErrors() +
                         (verify != X509_V_OK
                              ? std::string("; verify: ") + X509_verify_cert_error_string(verify)
                              : ""));
    }
    if (!waitFor(fd, err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, deadline)) {
      return unavailable("TLS handshake timed out");
    }
  }
}

Status writeAll(int fd, ssl_st* ssl, std::string_view bytes, Clock::time_point deadline,
                bool* reset) {
  while (!bytes.empty()) {
    if (ssl != nullptr) {
      ERR_clear_error();
      const int n = SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size()));
      if (n > 0) {
        bytes.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      const int err = SSL_get_error(ssl, n);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        if (!waitFor(fd, err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, deadline)) {
          return unavailable("send timed out");
        }
        continue;
      }
      if (err == SSL_ERROR_SYSCALL && errno == ECONNRESET) *reset = true;
      return unavailable("TLS send: " + sslErrors());
    }
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitFor(fd, POLLOUT, deadline)) return unavailable("send timed out");
      continue;
    }
    if (errno == ECONNRESET) *reset = true;
    return unavailable(std::string("send: ") + strerror(errno));
  }
  return Status::ok();
}

}  // namespace ferry::testing::client_socket
