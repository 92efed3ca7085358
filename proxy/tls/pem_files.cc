#include "proxy/tls/pem_files.h"

#include <openssl/err.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace ferry::tls {

std::string takeOpenSslErrors(const std::string& fallback) {
  std::string out;
  unsigned long code;
  char text[256];
  while ((code = ERR_get_error()) != 0) {
    ERR_error_string_n(code, text, sizeof(text));
    if (!out.empty()) out += "; ";
    out += text;
  }
  return out.empty() ? fallback : out;
}

// OpenSSL's own messages for a missing file are cryptic.
Status checkReadable(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalidArgument("cannot read \"" + path + "\": " + std::strerror(errno));
  return Status::ok();
}

Status failField(std::string* bad_field, const char* field, const std::string& message) {
  if (bad_field != nullptr) *bad_field = field;
  return invalidArgument(message);
}

Status loadChainAndKey(SSL_CTX* ctx, const std::string& cert_file, const std::string& key_file,
                       ChainFields fields, std::string* bad_field) {
  Status readable = checkReadable(cert_file);
  if (!readable.isOk()) return failField(bad_field, fields.cert, readable.message());
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return failField(bad_field, fields.cert,
                     "not a PEM certificate chain: " + takeOpenSslErrors("unknown error"));
  }
  readable = checkReadable(key_file);
  if (!readable.isOk()) return failField(bad_field, fields.key, readable.message());
  const std::string mismatch = std::string("does not match ") + fields.cert;
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return failField(bad_field, fields.key, mismatch);
    }
    return failField(bad_field, fields.key,
                     "not a PEM private key: " + takeOpenSslErrors("unknown error"));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return failField(bad_field, fields.key, mismatch);
  }
  return Status::ok();
}

Status loadCaBundle(SSL_CTX* ctx, const std::string& ca_file, const char* field,
                    std::string* bad_field) {
  Status readable = checkReadable(ca_file);
  if (!readable.isOk()) return failField(bad_field, field, readable.message());
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return failField(
        bad_field, field,
        "no PEM certificate in \"" + ca_file + "\": " + takeOpenSslErrors("unknown error"));
  }
  return Status::ok();
}

std::time_t certificateNotAfter(SSL_CTX* ctx) {
  X509* leaf = SSL_CTX_get0_certificate(ctx);
  if (leaf == nullptr) return 0;
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) != 1) return 0;
  return timegm(&tm);
}

}  // namespace ferry::tls
