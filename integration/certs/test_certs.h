#pragma once
// Certificates for TLS tests and the cell launcher's https mode (integration/cell), made at run
// time with the OpenSSL C API (nothing checked in, no `openssl` command needed): a CA, and leaf
// certificates it signs with the names, validity and usage a test asks for. Keys are EC P-256.
// Everything is PEM text; writeFile() puts it on disk for the processes under test.
//
//   auto ca = makeCa("test CA");
//   auto server = makeLeaf(ca, {.common_name = "owner", .dns = {"localhost"}, .ips =
//   {"127.0.0.1"}}); writeFile(dir + "/ca.pem", ca.cert_pem);

#include <string>
#include <vector>

#include "proxy/common/status.h"

namespace ferry::testing {

struct TestCert {
  std::string cert_pem;
  std::string key_pem;
};

struct LeafOptions {
  std::string common_name = "test";
  std::vector<std::string> dns = {};  // subjectAltName DNS entries
  std::vector<std::string> ips = {};  // subjectAltName IP entries
  long not_before_days = -1;          // relative to now
  long not_after_days = 365;          // negative: already expired
  bool client = false;                // extendedKeyUsage clientAuth instead of serverAuth
};

TestCert makeCa(const std::string& common_name);
TestCert makeLeaf(const TestCert& ca, const LeafOptions& options);
Status writeFile(const std::string& path, const std::string& contents);
// Writes <dir>/<stem>.pem (the certificate) and <dir>/<stem>.key (its key).
Status writeCertFiles(const std::string& dir, const std::string& stem, const TestCert& cert);

}  // namespace ferry::testing
