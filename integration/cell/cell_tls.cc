#include "integration/cell/cell_tls.h"

#include <filesystem>

#include "integration/certs/test_certs.h"

namespace ferry::testing {
namespace {

Status writePair(const std::string& cert_path, const std::string& key_path, const TestCert& c) {
  Status s = writeFile(cert_path, c.cert_pem);
  return s.isOk() ? writeFile(key_path, c.key_pem) : s;
}

}  // namespace

StatusOr<CellTlsFiles> writeCellTls(const std::string& work_dir,
                                    const std::vector<std::string>& members) {
  CellTlsFiles f;
  f.dir = work_dir + "/tls";
  std::error_code error;
  std::filesystem::create_directories(f.dir, error);
  if (error) return invalidArgument("tls dir " + f.dir + ": " + error.message());
  f.ca_file = f.dir + "/ca.pem";
  f.client_cert_file = f.dir + "/client.pem";
  f.client_key_file = f.dir + "/client.key";
  const TestCert ca = makeCa("ferry-cell test CA");
  Status s = writePair(f.ca_file, f.dir + "/ca.key", ca);
  if (s.isOk()) {
    s = writePair(f.client_cert_file, f.client_key_file,
                  makeLeaf(ca, {.common_name = "cell-client", .client = true}));
  }
  for (const auto& m : members) {
    if (!s.isOk()) break;
    // The peer URLs are https://127.0.0.1:<port>: ferry checks the IP SAN (RFC 6125 names an
    // IP literal by its iPAddress entry); localhost serves a client that dials by name.
    s = writePair(f.serverCert(m), f.serverKey(m),
                  makeLeaf(ca, {.common_name = m, .dns = {"localhost"}, .ips = {"127.0.0.1"}}));
    if (s.isOk()) {
      s = writePair(f.peerCert(m), f.peerKey(m), makeLeaf(ca, {.common_name = m, .client = true}));
    }
  }
  if (!s.isOk()) return s;
  return f;
}

std::string listenerTlsYaml(const CellTlsFiles& f, const std::string& member) {
  return "{cert_file: " + f.serverCert(member) + ", key_file: " + f.serverKey(member) +
         ", client_ca_file: " + f.ca_file + ", client_cert: require}";
}

std::string forwardingTlsYaml(const CellTlsFiles& f, const std::string& member,
                              bool with_client_cert) {
  std::string out = "{ca_file: " + f.ca_file;
  if (with_client_cert) {
    out += ", client_cert_file: " + f.peerCert(member) + ", client_key_file: " + f.peerKey(member);
  }
  return out + "}";
}

}  // namespace ferry::testing
