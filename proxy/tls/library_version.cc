#include "proxy/tls/library_version.h"

#include <openssl/crypto.h>

namespace ferry::tls {

const char* libraryVersion() { return OpenSSL_version(OPENSSL_VERSION); }

}  // namespace ferry::tls
