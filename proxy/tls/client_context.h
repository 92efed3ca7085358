#pragma once
// Client-side TLS for upstream connections to https owners (docs/forwarding.md: a
// fleet's peer URLs are https origins). A ClientContext is one configured SSL_CTX: the trust
// store, certificate verification (on unless the config says otherwise), an optional client
// certificate for mTLS, TLS 1.2 at least, and a small cache of sessions for resumption. It is
// built at start-up from `forwarding.tls` (and again on SIGHUP: ClientContextSlot below) and
// shared read-only by every worker (an SSL_CTX is thread-safe once configured; the session cache
// has its own lock, taken only at handshake time). Each upstream connection makes its own
// ClientSession (client_session.h) from it, which keeps the context alive while it lives.

#include <openssl/ssl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "proxy/common/status.h"
#include "proxy/tls/context_slot.h"
#include "proxy/tls/pem_files.h"

namespace ferry::tls {

struct ClientSettings {
  std::string ca_file;           // PEM bundle of trusted CAs; empty: system_trust_store.h
  bool verify = true;            // false: no chain or name check (config warns loudly)
  std::string client_cert_file;  // PEM chain, leaf first; set together with the key, or neither
  std::string client_key_file;
};

class ClientContext : public std::enable_shared_from_this<ClientContext> {
 public:
  // Builds the context; fails when a file is missing, unreadable or not valid PEM, or the key
  // does not match the certificate. `bad_field` (when given) receives the setting at fault:
  // "ca_file", "client_cert_file" or "client_key_file" (empty for other failures).
  static StatusOr<std::shared_ptr<ClientContext>> create(const ClientSettings& settings,
                                                         std::string* bad_field = nullptr);
  ~ClientContext();
  ClientContext(const ClientContext&) = delete;
  ClientContext& operator=(const ClientContext&) = delete;

  SSL_CTX* raw() const { return ctx_; }
  bool verify() const { return settings_.verify; }

  // Session resumption for pooled reconnects, keyed by target ("server_name|host:port"). The
  // newest session the target gave us, with a reference for the caller (nullptr: none).
  SSL_SESSION* takeSession(const std::string& key);
  void storeSession(const std::string& key, SSL_SESSION* session);  // takes the reference
  void forgetSession(const std::string& key);
  // Names the cache key of `ssl` (a session made from this context) for sessions it receives;
  // `key` must outlive `ssl`.
  static void attachSessionKey(SSL* ssl, const std::string* key);

 private:
  ClientContext(SSL_CTX* ctx, ClientSettings settings)
      : ctx_(ctx), settings_(std::move(settings)) {}
  static int onNewSession(SSL* ssl, SSL_SESSION* session);

  SSL_CTX* ctx_;
  const ClientSettings settings_;
  std::mutex sessions_mutex_;
  std::map<std::string, SSL_SESSION*> sessions_;
};
using ClientContextSharedPtr = std::shared_ptr<ClientContext>;

// The context new upstream connections use, swapped whole when the TLS files are re-read.
using ClientContextSlot = ContextSlot<ClientContext>;

}  // namespace ferry::tls
