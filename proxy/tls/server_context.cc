#include "proxy/tls/server_context.h"

#include <openssl/err.h>

#include <string_view>

#include "proxy/tls/pem_files.h"

namespace ferry::tls {
namespace {

// Session IDs and tickets are bound to this context (required by OpenSSL for resumption when
// client certificates are verified: a session must not cross verification settings).
constexpr unsigned char kSessionIdContext[] = "ferry-listener";

bool hasTls13Suite(SSL_CTX* ctx, std::string_view name) {
  STACK_OF(SSL_CIPHER)* ciphers = SSL_CTX_get_ciphers(ctx);
  for (int i = 0; i < sk_SSL_CIPHER_num(ciphers); ++i) {
    const SSL_CIPHER* cipher = sk_SSL_CIPHER_value(ciphers, i);
    // OpenSSL names TLS 1.2 ciphers its own way (ECDHE-RSA-AES128-GCM-SHA256): no clash.
    if (SSL_CIPHER_get_name(cipher) == name) return true;
  }
  return false;
}

// The TLS 1.3 suites, ':'-separated, in ferry's order. OpenSSL 3.0 skips names it does not
// know, so each one is looked for in what it kept: a misspelt suite is refused, not dropped.
Status setCipherSuites(SSL_CTX* ctx, const std::string& suites) {
  if (SSL_CTX_set_ciphersuites(ctx, suites.c_str()) != 1) {
    ERR_clear_error();
    return invalidArgument("not a TLS 1.3 cipher suite list: \"" + suites + "\"");
  }
  std::string_view rest = suites;
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::string_view name = rest.substr(0, colon);
    if (!hasTls13Suite(ctx, name)) {
      return invalidArgument("unknown TLS 1.3 cipher suite \"" + std::string(name) +
                             "\" (OpenSSL's names, e.g. TLS_AES_128_GCM_SHA256)");
    }
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  return Status::ok();
}

}  // namespace

bool isSupportedAlpn(const std::string& protocol) {
  return protocol == "h2" || protocol == "http/1.1";
}

StatusOr<std::shared_ptr<ServerContext>> ServerContext::create(
    const ServerSettings& settings, std::shared_ptr<TicketKeys> ticket_keys,
    std::string* bad_field) {
  if (bad_field != nullptr) bad_field->clear();
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return internalError(takeOpenSslErrors("SSL_CTX_new failed"));
  std::shared_ptr<ServerContext> context(new ServerContext(ctx, std::move(ticket_keys)));

  SSL_CTX_set_min_proto_version(ctx, settings.min_version);
  // As the client side (client_context.cc): partial writes from a moving, growing buffer, no
  // renegotiation (RFC 8446 removed it; for 1.2 it would make SSL_write read), read-ahead.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_read_ahead(ctx, 1);
  if (!settings.cipher_suites.empty()) {
    Status suites = setCipherSuites(ctx, settings.cipher_suites);
    if (!suites.isOk()) return failField(bad_field, "cipher_suites", suites.message());
  }
  // Fails only when no name in the list matches a cipher OpenSSL has (its syntax also allows
  // aliases and exclusions, so one unknown name among known ones is not an error).
  if (!settings.ciphers.empty() && SSL_CTX_set_cipher_list(ctx, settings.ciphers.c_str()) != 1) {
    ERR_clear_error();
    return failField(bad_field, "ciphers",
                     "no TLS 1.2 cipher OpenSSL knows in \"" + settings.ciphers + "\"");
  }

  Status loaded = loadChainAndKey(ctx, settings.cert_file, settings.key_file,
                                  {"cert_file", "key_file"}, bad_field);
  if (!loaded.isOk()) return loaded;
  context->not_after_ = certificateNotAfter(ctx);

  if (settings.client_cert != ClientCertMode::None) {
    if (settings.client_ca_file.empty()) {
      return failField(bad_field, "client_ca_file", "required when client_cert is set");
    }
    loaded = loadCaBundle(ctx, settings.client_ca_file, "client_ca_file", bad_field);
    if (!loaded.isOk()) return loaded;
    // The CertificateRequest names the acceptable CAs (RFC 8446 section 4.2.4).
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(settings.client_ca_file.c_str());
    if (names != nullptr) SSL_CTX_set_client_CA_list(ctx, names);
    ERR_clear_error();
    int mode = SSL_VERIFY_PEER;
    if (settings.client_cert == ClientCertMode::Require) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(ctx, mode, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }

  for (const auto& protocol : settings.alpn) {
    if (!isSupportedAlpn(protocol)) {
      return failField(bad_field, "alpn", "unsupported protocol \"" + protocol + "\"");
    }
    context->alpn_wire_ += static_cast<char>(protocol.size());
    context->alpn_wire_ += protocol;
  }
  if (!context->alpn_wire_.empty()) {
    SSL_CTX_set_alpn_select_cb(ctx, &ServerContext::onAlpn, context.get());
  }

  SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof(kSessionIdContext) - 1);
  // Stateless resumption only: tickets carry the session (no server-side cache, no lock, no
  // memory per client). One TLS 1.3 ticket per handshake is enough for a reconnect.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  if (settings.session_tickets && context->ticket_keys_ != nullptr) {
    SSL_CTX_set_num_tickets(ctx, 1);
    TicketKeys::install(ctx, context->ticket_keys_.get());
  } else {
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
  }
  return context;
}

ServerContext::~ServerContext() { SSL_CTX_free(ctx_); }

// RFC 7301 section 3.2: the server picks from the client's list by its own preference; with no
// protocol in common it answers a fatal no_application_protocol alert. A client that offers
// no ALPN at all is served (HTTP/1.1 over TLS predates ALPN).
int ServerContext::onAlpn(SSL*, const unsigned char** out, unsigned char* outlen,
                          const unsigned char* in, unsigned int inlen, void* arg) {
  auto* self = static_cast<ServerContext*>(arg);
  unsigned char* selected = nullptr;
  unsigned char selected_len = 0;
  const auto* ours = reinterpret_cast<const unsigned char*>(self->alpn_wire_.data());
  if (SSL_select_next_proto(&selected, &selected_len, ours,
                            static_cast<unsigned int>(self->alpn_wire_.size()), in,
                            inlen) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = selected;
  *outlen = selected_len;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace ferry::tls
