#pragma once
// Server-side TLS for ferry's listener (`listener.tls`): the fleet's https peer URLs can name
// the ferries themselves. A ServerContext is one configured SSL_CTX: the certificate chain and
// key, TLS 1.2 or 1.3 at least, the ALPN protocols offered, session tickets (keys from a shared,
// rotating TicketKeys), and optional client certificate verification (mTLS between ferries).
//
// Built at start-up and again on SIGHUP (a ServerContextSlot swaps it whole), shared read-only
// by every worker; each accepted connection makes its ServerSession (server_session.h) from it,
// which keeps the context alive while the connection lives. No per-request TLS allocation.

#include <openssl/ssl.h>

#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "proxy/common/status.h"
#include "proxy/tls/context_slot.h"
#include "proxy/tls/ticket_keys.h"

namespace ferry::tls {

enum class ClientCertMode { None, Optional, Require };

struct ServerSettings {
  std::string cert_file;  // PEM chain, leaf first
  std::string key_file;
  int min_version = TLS1_2_VERSION;              // or TLS1_3_VERSION
  std::vector<std::string> alpn = {"http/1.1"};  // in preference order
  bool session_tickets = true;
  std::string client_ca_file;  // with client_cert != None: CAs that sign client certificates
  ClientCertMode client_cert = ClientCertMode::None;
  std::string cipher_suites;  // TLS 1.3, OpenSSL syntax, server's order; empty: OpenSSL's
  std::string ciphers;        // TLS 1.2, OpenSSL cipher list; empty: OpenSSL's
};

// The ALPN protocols the listener can serve (RFC 7301 protocol IDs).
bool isSupportedAlpn(const std::string& protocol);

class ServerContext : public std::enable_shared_from_this<ServerContext> {
 public:
  // Fails when a file is missing, unreadable or not valid PEM, the key does not match the
  // certificate, or a cipher list names nothing OpenSSL knows; `bad_field` (when given)
  // receives the setting at fault: "cert_file", "key_file", "client_ca_file", "alpn",
  // "cipher_suites" or "ciphers" (empty for other failures). `ticket_keys` may be null when
  // settings.session_tickets is false.
  static StatusOr<std::shared_ptr<ServerContext>> create(const ServerSettings& settings,
                                                         std::shared_ptr<TicketKeys> ticket_keys,
                                                         std::string* bad_field = nullptr);
  ~ServerContext();
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  SSL_CTX* raw() const { return ctx_; }
  // notAfter of the served certificate, seconds since the epoch.
  std::time_t certificateExpiry() const { return not_after_; }

 private:
  ServerContext(SSL_CTX* ctx, std::shared_ptr<TicketKeys> keys)
      : ctx_(ctx), ticket_keys_(std::move(keys)) {}
  static int onAlpn(SSL* ssl, const unsigned char** out, unsigned char* outlen,
                    const unsigned char* in, unsigned int inlen, void* arg);

  SSL_CTX* ctx_;
  const std::shared_ptr<TicketKeys> ticket_keys_;
  std::string alpn_wire_;  // length-prefixed protocol list (RFC 7301 section 3.1)
  std::time_t not_after_ = 0;
};
using ServerContextSharedPtr = std::shared_ptr<ServerContext>;
using ServerContextSlot = ContextSlot<ServerContext>;

}  // namespace ferry::tls
