#pragma once
// The system's trust store, for upstream TLS without a `ca_file` (client_context.cc).
// OpenSSL's default verify paths read the whole CA bundle file into the context when it is built
// (Debian: /etc/ssl/certs/ca-certificates.crt, ~140 certificates): ~1.3 MiB of heap in every
// ferry process that forwards, for the one or two CAs a fleet's owners are signed by. The
// default certificate directory (Debian: /etc/ssl/certs, the `<subject hash>.N` links that
// ca-certificates keeps) gives OpenSSL the same trust, read lazily: a CA is loaded the first
// time a chain that names it is verified, and kept in the context's store from then on.

#include <openssl/ssl.h>

#include "proxy/common/status.h"

namespace ferry::tls {

enum class SystemTrust {
  kHashedDirectory,  // the default directory alone: each CA read when a chain needs it
  kDefaultPaths,     // OpenSSL's default file and directory: the bundle read at once
};

// Which source the environment calls for, read when a context is built: kDefaultPaths when
// SSL_CERT_FILE names a bundle (the operator's choice, honoured as OpenSSL honours it) or when no
// default directory (SSL_CERT_DIR's list, else OpenSSL's built-in directory) holds a hashed
// certificate entry; kHashedDirectory otherwise.
SystemTrust chooseSystemTrust();

// Points `ctx`'s store at the system's trust as chooseSystemTrust() says. Called once, while a
// context is built; fails only when OpenSSL does.
Status useSystemTrustStore(SSL_CTX* ctx);

}  // namespace ferry::tls
