#include "proxy/tls/client_session.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

namespace ferry::tls {
namespace {

bool isIpLiteral(const std::string& host) {
  in6_addr addr;
  return inet_pton(AF_INET, host.c_str(), &addr) == 1 ||
         inet_pton(AF_INET6, host.c_str(), &addr) == 1;
}

}  // namespace

std::unique_ptr<ClientSession> ClientSession::create(ClientContext& context, int fd,
                                                     const std::string& server_name,
                                                     std::string cache_key,
                                                     const std::vector<std::string>& alpn) {
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
  if (!alpn.empty()) {
    // RFC 7301 §3.1: a list of length-prefixed protocol names.
    std::string wire;
    for (const auto& protocol : alpn) {
      wire += static_cast<char>(protocol.size());
      wire += protocol;
    }
    // OpenSSL's one inverted return value: 0 is success.
    if (SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(wire.data()),
                            static_cast<unsigned int>(wire.size())) != 0) {
      return nullptr;
    }
  }
  ClientContext::attachSessionKey(ssl, &session->cache_key_);
  if (SSL_SESSION* cached = context.takeSession(session->cache_key_)) {
    SSL_set_session(ssl, cached);
    SSL_SESSION_free(cached);
  }
  return session;
}

IoState ClientSession::handshake() {
  const IoState state = Session::handshake();
  // A session the server no longer accepts must not be offered again.
  if (state == IoState::Error) context_->forgetSession(cache_key_);
  return state;
}

}  // namespace ferry::tls
