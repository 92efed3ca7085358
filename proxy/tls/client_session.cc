#include "proxy/tls/client_session.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <algorithm>

namespace ferry::tls {
namespace {

// One TLS record's worth of plaintext per SSL_write / SSL_read (RFC 8446 section 5.1).
constexpr size_t kRecordSize = 16 * 1024;

bool isIpLiteral(const std::string& host) {
  in6_addr addr;
  return inet_pton(AF_INET, host.c_str(), &addr) == 1 ||
         inet_pton(AF_INET6, host.c_str(), &addr) == 1;
}

}  // namespace

std::unique_ptr<ClientSession> ClientSession::create(ClientContext& context, int fd,
                                                     const std::string& server_name,
                                                     std::string cache_key) {
  ERR_clear_error();
  SSL* ssl = SSL_new(context.raw());
  if (ssl == nullptr) return nullptr;
  std::unique_ptr<ClientSession> session(new ClientSession(context, ssl, std::move(cache_key)));
  // The socket BIO does not close the fd (BIO_NOCLOSE): the connection owns it.
  if (SSL_set_fd(ssl, fd) != 1) return nullptr;
  SSL_set_connect_state(ssl);
  const bool ip = isIpLiteral(server_name);
  // RFC 6066 section 3: SNI carries host names only, never IP literals.
  if (!ip && !server_name.empty()) SSL_set_tlsext_host_name(ssl, server_name.c_str());
  if (context.verify()) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name.c_str())
                      : X509_VERIFY_PARAM_set1_host(param, server_name.c_str(), 0);
    if (ok != 1) return nullptr;
  }
  ClientContext::attachSessionKey(ssl, &session->cache_key_);
  if (SSL_SESSION* cached = context.takeSession(session->cache_key_)) {
    SSL_set_session(ssl, cached);
    SSL_SESSION_free(cached);
  }
  return session;
}

ClientSession::~ClientSession() { SSL_free(ssl_); }

IoState ClientSession::onFailure(int rc, const char* what) {
  const int err = SSL_get_error(ssl_, rc);
  switch (err) {
    case SSL_ERROR_WANT_READ:
      return IoState::WantRead;
    case SSL_ERROR_WANT_WRITE:
      return IoState::WantWrite;
    case SSL_ERROR_ZERO_RETURN:
      ERR_clear_error();
      return IoState::Closed;
    default:
      break;
  }
  failed_ = true;
  const int reason = ERR_GET_REASON(ERR_peek_error());
  switch (reason - SSL_AD_REASON_OFFSET) {  // a fatal alert the peer sent us
    case SSL_AD_HANDSHAKE_FAILURE:
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_REVOKED:
    case SSL_AD_CERTIFICATE_EXPIRED:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_ACCESS_DENIED:
    case SSL_AD_CERTIFICATE_REQUIRED:
      handshake_rejected_ = !read_any_;
      break;
    default:
      break;
  }
  // OpenSSL 3 reports an EOF without close_notify as SSL_ERROR_SSL ("unexpected eof while
  // reading"): a truncated stream, never a clean end (RFC 8446 section 6.1).
  error_ = std::string(what) + ": " +
           takeOpenSslErrors(err == SSL_ERROR_SYSCALL ? "connection reset or closed" : "TLS error");
  const long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK) {
    error_ += " (certificate: " + std::string(X509_verify_cert_error_string(verify)) + ")";
  }
  return IoState::Error;
}

IoState ClientSession::handshake() {
  ERR_clear_error();
  const int rc = SSL_connect(ssl_);
  if (rc == 1) return IoState::Done;
  IoState state = onFailure(rc, "TLS handshake");
  if (state == IoState::Closed) {
    failed_ = true;
    error_ = "TLS handshake: the peer closed the connection";
    state = IoState::Error;
  }
  // A session the server no longer accepts must not be offered again.
  if (state == IoState::Error) context_->forgetSession(cache_key_);
  return state;
}

IoResult ClientSession::read(evbuffer* input, size_t budget) {
  IoResult result;
  while (result.bytes < budget) {
    evbuffer_iovec vec;
    if (evbuffer_reserve_space(input, kRecordSize, &vec, 1) < 1) {
      result.state = IoState::Error;
      error_ = "out of memory";
      return result;
    }
    ERR_clear_error();
    size_t got = 0;
    const int rc = SSL_read_ex(ssl_, vec.iov_base, vec.iov_len, &got);
    if (rc != 1) {
      evbuffer_commit_space(input, &vec, 0);
      result.state = onFailure(rc, "TLS read");
      return result;
    }
    vec.iov_len = got;
    evbuffer_commit_space(input, &vec, 1);
    result.bytes += got;
    read_any_ = true;
  }
  result.state = IoState::Again;
  return result;
}

IoResult ClientSession::write(evbuffer* output) {
  IoResult result;
  while (true) {
    const size_t length = evbuffer_get_length(output);
    if (length == 0) {
      result.state = IoState::Done;
      return result;
    }
    // One record at a time, made contiguous. A retry after WantWrite passes at least as many
    // bytes as before (the buffer only grows at its end), as OpenSSL requires; the pointer may
    // move (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER).
    const size_t chunk = std::min(length, kRecordSize);
    const unsigned char* data = evbuffer_pullup(output, static_cast<ev_ssize_t>(chunk));
    ERR_clear_error();
    size_t sent = 0;
    const int rc = SSL_write_ex(ssl_, data, chunk, &sent);
    if (rc != 1) {
      result.state = onFailure(rc, "TLS write");
      if (result.state == IoState::Closed) result.state = IoState::Error;
      return result;
    }
    evbuffer_drain(output, sent);
    result.bytes += sent;
  }
}

void ClientSession::shutdown() {
  if (shut_down_ || failed_ || SSL_is_init_finished(ssl_) != 1) return;
  shut_down_ = true;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // queues and tries to send close_notify; we never wait for the reply
  ERR_clear_error();
}

}  // namespace ferry::tls
