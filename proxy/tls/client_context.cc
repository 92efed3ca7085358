#include "proxy/tls/client_context.h"

#include <openssl/err.h>
#include <openssl/x509.h>

#include "proxy/tls/system_trust_store.h"

namespace ferry::tls {
namespace {

// SSL ex_data slot holding the session cache key (a const std::string*).
int sessionKeyIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

StatusOr<std::shared_ptr<ClientContext>> ClientContext::create(const ClientSettings& settings,
                                                               std::string* bad_field) {
  if (bad_field != nullptr) bad_field->clear();
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return internalError(takeOpenSslErrors("SSL_CTX_new failed"));
  std::shared_ptr<ClientContext> context(new ClientContext(ctx, settings));

  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Writes resume with a grown buffer (the connection's output may gain bytes or move between
  // retries) and may be partial, like write(2).
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  // No renegotiation: SSL_write then never needs to read.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  // Read-ahead: one recv() fills OpenSSL's record buffer (up to a full record and more)
  // instead of two per record (header, then body). OpenSSL may then hold whole records the
  // socket will not signal again; the connection checks SSL_has_pending() for them.
  SSL_CTX_set_read_ahead(ctx, 1);

  if (settings.verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (settings.ca_file.empty()) {
      Status trusted = useSystemTrustStore(ctx);
      if (!trusted.isOk()) return failField(bad_field, "ca_file", trusted.message());
    }
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  if (!settings.ca_file.empty()) {
    // Checked even with verify off: a wrong path is a mistake worth reporting.
    Status loaded = loadCaBundle(ctx, settings.ca_file, "ca_file", bad_field);
    if (!loaded.isOk()) return loaded;
  }

  const bool has_cert = !settings.client_cert_file.empty();
  const bool has_key = !settings.client_key_file.empty();
  if (has_cert != has_key) {
    return failField(bad_field, has_cert ? "client_key_file" : "client_cert_file",
                     "client_cert_file and client_key_file must be set together");
  }
  if (has_cert) {
    Status loaded = loadChainAndKey(ctx, settings.client_cert_file, settings.client_key_file,
                                    {"client_cert_file", "client_key_file"}, bad_field);
    if (!loaded.isOk()) return loaded;
  }

  // Client-side session cache: OpenSSL hands each new session (TLS 1.3: each ticket) to
  // onNewSession; pooled reconnects to the same target resume it.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_set_app_data(ctx, context.get());
  SSL_CTX_sess_set_new_cb(ctx, &ClientContext::onNewSession);
  return context;
}

ClientContext::~ClientContext() {
  for (auto& [key, session] : sessions_) SSL_SESSION_free(session);
  SSL_CTX_free(ctx_);
}

void ClientContext::attachSessionKey(SSL* ssl, const std::string* key) {
  SSL_set_ex_data(ssl, sessionKeyIndex(), const_cast<std::string*>(key));
}

int ClientContext::onNewSession(SSL* ssl, SSL_SESSION* session) {
  auto* self = static_cast<ClientContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  auto* key = static_cast<const std::string*>(SSL_get_ex_data(ssl, sessionKeyIndex()));
  if (self == nullptr || key == nullptr) return 0;
  self->storeSession(*key, session);
  return 1;  // we keep the reference
}

SSL_SESSION* ClientContext::takeSession(const std::string& key) {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return nullptr;
  SSL_SESSION_up_ref(it->second);
  return it->second;
}

void ClientContext::storeSession(const std::string& key, SSL_SESSION* session) {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  auto [it, inserted] = sessions_.emplace(key, session);
  if (!inserted) {
    SSL_SESSION_free(it->second);
    it->second = session;
  }
}

void ClientContext::forgetSession(const std::string& key) {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return;
  SSL_SESSION_free(it->second);
  sessions_.erase(it);
}

}  // namespace ferry::tls
