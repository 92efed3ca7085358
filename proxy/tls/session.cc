#include "proxy/tls/session.h"

#include <openssl/err.h>
#include <openssl/x509.h>

#include <algorithm>

#include "proxy/tls/pem_files.h"

namespace ferry::tls {
namespace {

// One TLS record's worth of plaintext per SSL_write / SSL_read (RFC 8446 section 5.1).
constexpr size_t kRecordSize = 16 * 1024;

// SSL_get_error() needs an empty error queue before each SSL_* call. ERR_clear_error() walks
// every slot of the queue on each call (~400 instructions, three calls per keep-alive request);
// the queue is almost always empty already, which ERR_peek_error() tells for a fraction.
void clearErrors() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

}  // namespace

Session::~Session() { SSL_free(ssl_); }

const std::string& Session::peerIdentity() const {
  static const std::string kNone;
  return kNone;
}

IoState Session::onFailure(int rc, const char* what) {
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
  error_code_ = ERR_peek_error();
  ssl_error_ = err;
  const int reason = ERR_GET_REASON(error_code_);
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

std::string Session::failureReason() const {
  if (ssl_error_ == SSL_ERROR_SYSCALL || ssl_error_ == SSL_ERROR_ZERO_RETURN) return "closed";
  if (ERR_GET_LIB(error_code_) != ERR_LIB_SSL) return "other";
  const int reason = ERR_GET_REASON(error_code_);
  switch (reason) {
    case SSL_R_UNEXPECTED_EOF_WHILE_READING:
      return "closed";
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_VERSION_TOO_LOW:
      return "version";
    case SSL_R_NO_APPLICATION_PROTOCOL:
      return "alpn";
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      return "no_client_cert";
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
      return "bad_client_cert";
    default:
      break;
  }
  // A fatal alert from the client (e.g. it does not trust our certificate: unknown_ca,
  // bad_certificate, certificate_expired).
  if (reason >= SSL_AD_REASON_OFFSET) return "peer_alert";
  return "other";
}

IoState Session::handshake() {
  clearErrors();
  const int rc = SSL_do_handshake(ssl_);
  if (rc == 1) return IoState::Done;
  IoState state = onFailure(rc, "TLS handshake");
  if (state == IoState::Closed) {
    failed_ = true;
    error_ = "TLS handshake: the peer closed the connection";
    state = IoState::Error;
  }
  return state;
}

IoResult Session::read(evbuffer* input, size_t budget) {
  IoResult result;
  while (result.bytes < budget) {
    size_t got = 0;
    int rc = 0;
    if (large_reads_) {
      // Bulk transfers decrypt straight into space reserved at the end of the input: no copy.
      evbuffer_iovec vec;
      if (evbuffer_reserve_space(input, kRecordSize, &vec, 1) < 1) {
        result.state = IoState::Error;
        error_ = "out of memory";
        return result;
      }
      clearErrors();
      rc = SSL_read_ex(ssl_, vec.iov_base, vec.iov_len, &got);
      vec.iov_len = rc == 1 ? got : 0;
      evbuffer_commit_space(input, &vec, rc == 1 ? 1 : 0);
    } else {
      // Requests and small bodies arrive in records of a few hundred bytes: reserving 16 KiB
      // in an empty input would allocate a block per request and free it once the codec
      // drained it, which costs more than copying the bytes from the stack (as the plain
      // path, net/connection.cc).
      char chunk[kRecordSize];
      clearErrors();
      rc = SSL_read_ex(ssl_, chunk, sizeof(chunk), &got);
      if (rc == 1 && evbuffer_add(input, chunk, got) != 0) {
        result.state = IoState::Error;
        error_ = "out of memory";
        return result;
      }
    }
    if (rc != 1) {
      result.state = onFailure(rc, "TLS read");
      return result;
    }
    large_reads_ = got > kRecordSize / 2;
    result.bytes += got;
    read_any_ = true;
    // OpenSSL reads ahead (SSL_CTX_set_read_ahead): it took what the socket held, up to its
    // buffer's size. Nothing left in that buffer means nothing more until the socket is
    // readable again, which its (level-triggered) event reports; another SSL_read now would
    // only cost a read() that fails with EAGAIN, once per request on keep-alive.
    if (!hasPending()) {
      result.state = IoState::WantRead;
      return result;
    }
  }
  result.state = IoState::Again;
  return result;
}

IoResult Session::write(evbuffer* output) {
  IoResult result;
  while (true) {
    const size_t length = evbuffer_get_length(output);
    if (length == 0) {
      result.state = IoState::Done;
      return result;
    }
    // One record at a time, made contiguous. A retry after WantWrite passes at least as many
    // bytes as before (the buffer only grows at its end), as OpenSSL requires; the pointer may
    // move (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER). A response's head and body usually sit in
    // separate blocks: copy them to the stack rather than pull them up, which would allocate
    // a block of the record's size.
    const size_t chunk = std::min(length, kRecordSize);
    evbuffer_iovec first;
    const unsigned char* data = nullptr;
    unsigned char joined[kRecordSize];
    if (evbuffer_peek(output, -1, nullptr, &first, 1) >= 1 && first.iov_len >= chunk) {
      data = static_cast<const unsigned char*>(first.iov_base);
    } else if (evbuffer_copyout(output, joined, chunk) == static_cast<ev_ssize_t>(chunk)) {
      data = joined;
    } else {
      result.state = IoState::Error;
      error_ = "TLS write: cannot read the output buffer";
      return result;
    }
    clearErrors();
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

void Session::shutdown() {
  if (shut_down_ || failed_ || SSL_is_init_finished(ssl_) != 1) return;
  shut_down_ = true;
  clearErrors();
  SSL_shutdown(ssl_);  // queues and tries to send close_notify; we never wait for the reply
  ERR_clear_error();
}

}  // namespace ferry::tls
