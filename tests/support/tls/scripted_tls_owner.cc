#include "tests/support/tls/scripted_tls_owner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "integration/harness/loopback.h"

namespace ferry::testing {
namespace {

int refuseClientHello(SSL*, int* alert, void*) {
  *alert = SSL_AD_HANDSHAKE_FAILURE;
  return SSL_CLIENT_HELLO_ERROR;
}

}  // namespace

ScriptedTlsOwner::ScriptedTlsOwner(const std::string& cert_file, const std::string& key_file,
                                   TlsOwnerScript script)
    : script_(std::move(script)) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr || SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    std::abort();  // a broken test set-up, not a condition under test
  }
  static const unsigned char kSidContext[] = "ferry-scripted-owner";
  SSL_CTX_set_session_id_context(ctx, kSidContext, sizeof(kSidContext) - 1);
  if (script_.action == TlsOwnerScript::Action::HandshakeAlert) {
    SSL_CTX_set_client_hello_cb(ctx, &refuseClientHello, nullptr);
  }
  ctx_ = ctx;
  listen_fd_ = testing::listenOnLoopback(port_);
  if (pipe2(wake_fd_, O_CLOEXEC) != 0) std::abort();
  thread_ = std::thread([this] { run(); });
}

ScriptedTlsOwner::~ScriptedTlsOwner() {
  (void)!write(wake_fd_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  for (int fd : {listen_fd_, wake_fd_[0], wake_fd_[1]}) ::close(fd);
  SSL_CTX_free(static_cast<SSL_CTX*>(ctx_));
}

// True when `fd` is readable; false on timeout or when the owner is being destroyed.
bool ScriptedTlsOwner::waitReadable(int fd, int timeout_ms) const {
  pollfd p[2] = {{fd, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
  return poll(p, 2, timeout_ms) > 0 && p[1].revents == 0;
}

void ScriptedTlsOwner::run() {
  while (waitReadable(listen_fd_, -1)) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    timeval tv{5, 0};  // a blocking handshake or write never hangs the test
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    serve(fd);
    ::close(fd);
  }
}

void ScriptedTlsOwner::serve(int fd) {
  SSL* ssl = SSL_new(static_cast<SSL_CTX*>(ctx_));
  SSL_set_fd(ssl, fd);
  if (!waitReadable(fd, 5000) || SSL_accept(ssl) != 1) {
    ERR_clear_error();
    SSL_free(ssl);
    return;
  }
  ++handshakes_;
  if (SSL_session_reused(ssl) == 1) ++resumed_;

  // The request: a head, then a Content-Length body (the tests send small ones).
  std::string in;
  char buf[4096];
  size_t head_end = std::string::npos;
  size_t need = 0;
  bool whole = false;
  while (!whole) {
    if (SSL_pending(ssl) == 0 && !waitReadable(fd, 5000)) break;
    const int n = SSL_read(ssl, buf, sizeof(buf));
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos) {
      head_end = in.find("\r\n\r\n");
      if (head_end == std::string::npos) continue;
      std::string head = in.substr(0, head_end);
      for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const size_t cl = head.find("\ncontent-length:");
      need = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
    }
    whole = in.size() >= head_end + 4 + need;
  }
  if (whole) ++requests_;

  if (whole && script_.action == TlsOwnerScript::Action::ResetAfterRequest) {
    linger lin{1, 0};  // close() now sends RST
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
  } else if (whole) {
    size_t off = 0;
    const size_t step = std::max<size_t>(1, script_.record_size);
    while (off < script_.response.size()) {
      const size_t n = std::min(step, script_.response.size() - off);
      if (SSL_write(ssl, script_.response.data() + off, static_cast<int>(n)) <= 0) break;
      off += n;
    }
    if (off == script_.response.size()) ++responses_;
    if (script_.end == TlsOwnerScript::End::CloseNotify) {
      SSL_shutdown(ssl);
    } else if (script_.end == TlsOwnerScript::End::KeepOpen) {
      // Until the peer closes or the owner is destroyed.
      while (waitReadable(fd, -1) && SSL_read(ssl, buf, sizeof(buf)) > 0) {
      }
    }
  }
  // TcpClose: SSL_free sends nothing, so the peer sees EOF without close_notify.
  ERR_clear_error();
  SSL_free(ssl);
}

}  // namespace ferry::testing
