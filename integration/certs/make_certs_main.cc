// ferry-test-certs DIR: writes a test CA (DIR/ca.pem) and a server certificate it signs for
// localhost and 127.0.0.1 (DIR/server.pem, DIR/server.key), for scripts that need an https
// listener without the `openssl` command (integration/conformance/run.sh --h2-tls).
#include <cstdio>
#include <string>

#include "integration/certs/test_certs.h"

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: ferry-test-certs DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  using namespace ferry::testing;
  const TestCert ca = makeCa("ferry test CA");
  const TestCert server =
      makeLeaf(ca, {.common_name = "localhost", .dns = {"localhost"}, .ips = {"127.0.0.1"}});
  for (const ferry::Status& s :
       {writeFile(dir + "/ca.pem", ca.cert_pem), writeCertFiles(dir, "server", server)}) {
    if (!s.isOk()) {
      std::fprintf(stderr, "ferry-test-certs: %s\n", s.message().c_str());
      return 1;
    }
  }
  return 0;
}
