#pragma once
// The https mode of a cell (CellOptions::tls): the files it generates into its work dir and the
// listener.tls / forwarding.tls blocks each ferry gets. One test CA signs
//   - every member's server certificate (CN = member name, SAN IP 127.0.0.1 and localhost),
//   - every member's client certificate (CN = member name, clientAuth): the ferry presents it
//     when it forwards to a peer's ferry (mTLS between ferries),
//   - one client certificate for the cell's own clients (the demo, tests: CN = cell-client).
// Every ferry's listener requires a client certificate signed by that CA (client_cert: require)
// and verifies peers against it; nothing else is trusted. Certificates come from
// integration/certs (OpenSSL C API), fresh for every cell.
//
//   auto files = writeCellTls(dir, {"inst-1", "inst-2"});
//   listenerTlsYaml(*files, "inst-1");   // {cert_file: .., key_file: .., client_ca_file: ..}

#include <string>
#include <vector>

#include "integration/harness/http_client.h"
#include "proxy/common/status.h"

namespace ferry::testing {

struct CellTlsFiles {
  std::string dir;      // <work dir>/tls
  std::string ca_file;  // ca.pem: signs (and so verifies) every server and client certificate
  std::string client_cert_file;  // client.pem / client.key: the cell's own clients
  std::string client_key_file;

  std::string serverCert(const std::string& member) const { return dir + "/" + member + ".pem"; }
  std::string serverKey(const std::string& member) const { return dir + "/" + member + ".key"; }
  std::string peerCert(const std::string& member) const {
    return dir + "/" + member + "-client.pem";
  }
  std::string peerKey(const std::string& member) const {
    return dir + "/" + member + "-client.key";
  }
  // What a client of the cell connects with: the CA and the cell's client certificate.
  ClientTls clientTls() const { return {ca_file, client_cert_file, client_key_file, ""}; }
};

// Generates the CA and the certificates into `work_dir`/tls (created; files overwritten).
StatusOr<CellTlsFiles> writeCellTls(const std::string& work_dir,
                                    const std::vector<std::string>& members);

// listener.tls of `member`'s ferry, a YAML flow map: its server certificate, and mTLS required
// against the cell CA.
std::string listenerTlsYaml(const CellTlsFiles& files, const std::string& member);
// forwarding.tls of `member`'s ferry: verify peers against the cell CA, and present the
// member's client certificate unless `with_client_cert` is false (a ferry that cannot forward
// to a listener requiring mTLS).
std::string forwardingTlsYaml(const CellTlsFiles& files, const std::string& member,
                              bool with_client_cert = true);

}  // namespace ferry::testing
