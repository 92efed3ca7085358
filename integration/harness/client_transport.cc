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

#include "integration/harness/client_socket.h"

namespace ferry::testing {
using Clock = ClientTransport::Clock;
using client_socket::waitFor;

Status ClientTransport::connect(uint16_t port, const ClientTls* tls, std::string_view alpn,
                                Clock::time_point deadline) {
  close();
  reset_ = false;
  auto fd = client_socket::connectLoopback(port, deadline);
  if (!fd.isOk()) return fd.status();
  fd_ = *fd;
  if (tls != nullptr) {
    client_socket::TlsSession session;
    Status s = client_socket::startTls(fd_, *tls, alpn, deadline, session);
    ssl_ctx_ = session.ctx;
    ssl_ = session.ssl;
    if (!s.isOk()) {
      close();
      return s;
    }
  }
  return Status::ok();
}

std::string ClientTransport::alpnSelected() const {
  if (ssl_ == nullptr) return "";
  const unsigned char* p = nullptr;
  unsigned len = 0;
  SSL_get0_alpn_selected(ssl_, &p, &len);
  return p == nullptr ? "" : std::string(reinterpret_cast<const char*>(p), len);
}

void ClientTransport::close() {
  client_socket::TlsSession{ssl_ctx_, ssl_}.free();
  ssl_ = nullptr;
  ssl_ctx_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status ClientTransport::writeAll(std::string_view bytes, Clock::time_point deadline) {
  if (fd_ < 0) return unavailable("not connected");
  return client_socket::writeAll(fd_, ssl_, bytes, deadline, &reset_);
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
