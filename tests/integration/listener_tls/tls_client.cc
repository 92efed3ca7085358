#include "tests/integration/listener_tls/tls_client.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <memory>

#include "integration/harness/loopback.h"

namespace ferry::itest {
namespace {

std::string openSslErrors() {
  std::string out;
  unsigned long code;
  char text[256];
  while ((code = ERR_get_error()) != 0) {
    ERR_error_string_n(code, text, sizeof(text));
    out += text;
    out += "; ";
  }
  return out.empty() ? "closed" : out;
}

std::string subjectCn(X509* cert) {
  if (cert == nullptr) return "";
  char cn[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
  return cn;
}

// TLS 1.3 tickets arrive after the handshake, each as a new session (RFC 8446 section 4.6.1):
// keep the newest.
int onNewSession(SSL* ssl, SSL_SESSION* session) {
  auto* result = static_cast<TlsClientResult*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (result->session != nullptr) SSL_SESSION_free(result->session);
  result->session = session;
  return 1;
}

}  // namespace

TlsClientResult tlsRequest(uint16_t port, const TlsClientOptions& o) {
  TlsClientResult result;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        &SSL_CTX_free);
  SSL_CTX_set_session_cache_mode(ctx.get(),
                                 SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_set_app_data(ctx.get(), &result);
  SSL_CTX_sess_set_new_cb(ctx.get(), &onNewSession);
  if (!o.ca_file.empty()) {
    SSL_CTX_load_verify_locations(ctx.get(), o.ca_file.c_str(), nullptr);
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  if (!o.cert_file.empty()) {
    SSL_CTX_use_certificate_chain_file(ctx.get(), o.cert_file.c_str());
    SSL_CTX_use_PrivateKey_file(ctx.get(), o.key_file.c_str(), SSL_FILETYPE_PEM);
  }
  if (!o.cipher_suites.empty()) SSL_CTX_set_ciphersuites(ctx.get(), o.cipher_suites.c_str());
  if (!o.ciphers.empty()) SSL_CTX_set_cipher_list(ctx.get(), o.ciphers.c_str());
  if (o.max_version != 0) SSL_CTX_set_max_proto_version(ctx.get(), o.max_version);
  int fd = testing::connectToLoopback(port, std::chrono::seconds(5));
  if (fd < 0) {
    result.error = "connect failed";
    return result;
  }
  SSL* ssl = SSL_new(ctx.get());
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, o.verify_host.c_str());
  if (!o.ca_file.empty()) SSL_set1_host(ssl, o.verify_host.c_str());
  if (!o.alpn.empty()) {
    std::string wire(1, static_cast<char>(o.alpn.size()));
    wire += o.alpn;
    SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(wire.data()),
                        static_cast<unsigned>(wire.size()));
  }
  if (o.resume != nullptr) SSL_set_session(ssl, o.resume);
  if (SSL_connect(ssl) != 1) {
    result.error = openSslErrors();
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) result.error += X509_verify_cert_error_string(verify);
  } else {
    result.handshake_ok = true;
    result.resumed = SSL_session_reused(ssl) == 1;
    const unsigned char* alpn = nullptr;
    unsigned alpn_len = 0;
    SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
    result.alpn.assign(reinterpret_cast<const char*>(alpn), alpn_len);
    result.cipher = SSL_CIPHER_get_name(SSL_get_current_cipher(ssl));
    result.server_cn = subjectCn(SSL_get0_peer_certificate(ssl));
    if (SSL_write(ssl, o.request.data(), static_cast<int>(o.request.size())) <= 0) {
      result.error = "write: " + openSslErrors();
    }
    if (o.before_read) o.before_read();
    char buf[16384];
    while (true) {
      const int got = SSL_read(ssl, buf, sizeof(buf));
      if (got <= 0) {
        const int err = SSL_get_error(ssl, got);
        if (err != SSL_ERROR_ZERO_RETURN && result.response.empty()) {
          result.error = "read: " + openSslErrors();
        }
        break;
      }
      result.response.append(buf, static_cast<size_t>(got));
    }
    // A session is only kept resumable by a connection that ends with close_notify.
    SSL_shutdown(ssl);
  }
  SSL_free(ssl);
  ::close(fd);
  return result;
}

}  // namespace ferry::itest
