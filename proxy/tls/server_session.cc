#include "proxy/tls/server_session.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

namespace ferry::tls {

std::unique_ptr<ServerSession> ServerSession::create(ServerContext& context, int fd) {
  ERR_clear_error();
  SSL* ssl = SSL_new(context.raw());
  if (ssl == nullptr) return nullptr;
  std::unique_ptr<ServerSession> session(new ServerSession(context, ssl));
  // The socket BIO does not close the fd (BIO_NOCLOSE): the connection owns it.
  if (SSL_set_fd(ssl, fd) != 1) return nullptr;
  SSL_set_accept_state(ssl);
  return session;
}

IoState ServerSession::handshake() {
  const IoState state = Session::handshake();
  if (state == IoState::Done) readPeerIdentity();
  return state;
}

void ServerSession::readPeerIdentity() {
  X509* cert = SSL_get0_peer_certificate(ssl_);
  // Only a certificate that verified is an identity (client_cert: optional lets a client in
  // without one, never with a bad one: verification failures abort the handshake).
  if (cert == nullptr || SSL_get_verify_result(ssl_) != X509_V_OK) return;
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return;
  X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  bool first = true;
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    const char* kind = name->type == GEN_DNS ? "DNS:" : name->type == GEN_URI ? "URI:" : nullptr;
    if (kind == nullptr) continue;
    const ASN1_IA5STRING* text =
        name->type == GEN_DNS ? name->d.dNSName : name->d.uniformResourceIdentifier;
    BIO_puts(bio, first ? ";" : ",");
    first = false;
    BIO_puts(bio, kind);
    BIO_write(bio, ASN1_STRING_get0_data(text), ASN1_STRING_length(text));
  }
  GENERAL_NAMES_free(names);
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio, &data);
  peer_identity_.assign(data, static_cast<size_t>(length));
  BIO_free(bio);
}

}  // namespace ferry::tls
