#include "proxy/tls/system_trust_store.h"

#include <openssl/x509.h>
#include <stdlib.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <string_view>

#include "proxy/tls/pem_files.h"

namespace ferry::tls {
namespace {

// A certificate link as c_rehash and OpenSSL's hashed-directory lookup name it: eight hex
// digits of the subject hash, a dot, a decimal sequence number ("3513523f.0"). CRLs (".r0")
// do not count.
bool isHashedCertificateName(std::string_view name) {
  if (name.size() < 10 || name[8] != '.') return false;
  for (size_t i = 0; i < 8; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  for (size_t i = 9; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return true;
}

bool holdsHashedCertificate(const std::string& dir) {
  std::error_code error;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    if (isHashedCertificateName(it->path().filename().native())) return true;
  }
  return false;
}

// SSL_CERT_DIR is a list, as OpenSSL reads it (':'-separated on Unix).
bool anyDefaultDirectoryIsHashed() {
  const char* from_env = ::getenv(X509_get_default_cert_dir_env());
  const std::string_view dirs = from_env != nullptr ? from_env : X509_get_default_cert_dir();
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string_view::npos) end = dirs.size();
    if (end > start && holdsHashedCertificate(std::string(dirs.substr(start, end - start)))) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

}  // namespace

SystemTrust chooseSystemTrust() {
  const char* file = ::getenv(X509_get_default_cert_file_env());
  if (file != nullptr && *file != '\0') return SystemTrust::kDefaultPaths;
  return anyDefaultDirectoryIsHashed() ? SystemTrust::kHashedDirectory : SystemTrust::kDefaultPaths;
}

Status useSystemTrustStore(SSL_CTX* ctx) {
  const int loaded = chooseSystemTrust() == SystemTrust::kHashedDirectory
                         ? SSL_CTX_set_default_verify_dir(ctx)
                         : SSL_CTX_set_default_verify_paths(ctx);
  if (loaded != 1) {
    return internalError("cannot load the system trust store: " +
                         takeOpenSslErrors("unknown error"));
  }
  return Status::ok();
}

}  // namespace ferry::tls
