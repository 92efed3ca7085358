#include "integration/certs/test_certs.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <cstdlib>
#include <fstream>

namespace ferry::testing {
namespace {

std::string toPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

std::string toPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

EVP_PKEY* keyFromPem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return key;
}

X509* certFromPem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

void addExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) std::abort();  // a typo in a test, not a runtime condition
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

X509* newCert(EVP_PKEY* key, const std::string& common_name, long from_days, long to_days) {
  static std::atomic<long> serial{1};
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), from_days * 86400);
  X509_gmtime_adj(X509_getm_notAfter(cert), to_days * 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  return cert;
}

}  // namespace

TestCert makeCa(const std::string& common_name) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = newCert(key, common_name, -1, 3650);
  X509_set_issuer_name(cert, X509_get_subject_name(cert));
  addExtension(cert, cert, NID_basic_constraints, "critical,CA:TRUE");
  addExtension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  addExtension(cert, cert, NID_subject_key_identifier, "hash");
  X509_sign(cert, key, EVP_sha256());
  TestCert out{toPem(cert), toPem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

TestCert makeLeaf(const TestCert& ca, const LeafOptions& options) {
  EVP_PKEY* ca_key = keyFromPem(ca.key_pem);
  X509* ca_cert = certFromPem(ca.cert_pem);
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = newCert(key, options.common_name, options.not_before_days, options.not_after_days);
  X509_set_issuer_name(cert, X509_get_subject_name(ca_cert));
  addExtension(cert, ca_cert, NID_basic_constraints, "critical,CA:FALSE");
  addExtension(cert, ca_cert, NID_key_usage, "critical,digitalSignature");
  addExtension(cert, ca_cert, NID_ext_key_usage, options.client ? "clientAuth" : "serverAuth");
  addExtension(cert, ca_cert, NID_authority_key_identifier, "keyid");
  std::string san;
  for (const auto& d : options.dns) san += (san.empty() ? "DNS:" : ",DNS:") + d;
  for (const auto& ip : options.ips) san += (san.empty() ? "IP:" : ",IP:") + ip;
  if (!san.empty()) addExtension(cert, ca_cert, NID_subject_alt_name, san);
  X509_sign(cert, ca_key, EVP_sha256());
  TestCert out{toPem(cert), toPem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  X509_free(ca_cert);
  EVP_PKEY_free(ca_key);
  return out;
}

Status writeFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) return internalError("cannot write " + path);
  return Status::ok();
}

Status writeCertFiles(const std::string& dir, const std::string& stem, const TestCert& cert) {
  Status s = writeFile(dir + "/" + stem + ".pem", cert.cert_pem);
  return s.isOk() ? writeFile(dir + "/" + stem + ".key", cert.key_pem) : s;
}

}  // namespace ferry::testing
