#pragma once
// What both TLS sides do with files and OpenSSL's error queue: check a file is readable before
// OpenSSL's cryptic messages, load a certificate chain and its key into an SSL_CTX, a CA bundle
// into its trust store, and read a certificate's expiry. Used by ClientContext (forwarding.tls)
// and ServerContext (listener.tls). A failing load names the setting at fault through
// `bad_field`, so config errors and reload logs can name the exact key path.

#include <openssl/ssl.h>

#include <ctime>
#include <string>

#include "proxy/common/status.h"

namespace ferry::tls {

// The text of OpenSSL's error queue (oldest first), then clears it; `fallback` when empty.
std::string takeOpenSslErrors(const std::string& fallback);

// The file exists and can be read.
Status checkReadable(const std::string& path);

// Field names for the failures below (config keys differ per side).
struct ChainFields {
  const char* cert;  // e.g. "cert_file" or "client_cert_file"
  const char* key;
};

// Loads a PEM chain (leaf first) and its private key into `ctx` and checks they match.
Status loadChainAndKey(SSL_CTX* ctx, const std::string& cert_file, const std::string& key_file,
                       ChainFields fields, std::string* bad_field);

// Loads the PEM CA bundle `ca_file` as the trust store of `ctx`; `field` names it on failure.
Status loadCaBundle(SSL_CTX* ctx, const std::string& ca_file, const char* field,
                    std::string* bad_field);

// notAfter of the leaf certificate `ctx` presents, seconds since the epoch (0 when none).
std::time_t certificateNotAfter(SSL_CTX* ctx);

// Sets *bad_field (when given) to `field` and returns invalidArgument(message).
Status failField(std::string* bad_field, const char* field, const std::string& message);

}  // namespace ferry::tls
