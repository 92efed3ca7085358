#pragma once
// A blocking OpenSSL client for listener TLS tests: connect to 127.0.0.1:port, handshake
// (verifying against a CA file and a host name when asked), optionally present a client
// certificate and resume a session, send one request and read the response to EOF.
#include <openssl/ssl.h>

#include <cstdint>
#include <functional>
#include <string>

namespace ferry::itest {

struct TlsClientOptions {
  std::string ca_file;                    // empty: no verification
  std::string verify_host = "localhost";  // sent as SNI and checked against the certificate
  std::string cert_file;                  // client certificate (mTLS)
  std::string key_file;
  SSL_SESSION* resume = nullptr;  // offered for resumption (not owned)
  std::string alpn = "http/1.1";  // offered ALPN protocol (empty: none)
  std::string request = "GET /tls HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  std::function<void()> before_read;  // runs after the request was sent (e.g. stall the read)
  std::string cipher_suites;          // TLS 1.3 suites offered, in this order (empty: OpenSSL's)
  std::string ciphers;                // TLS 1.2 ciphers offered (empty: OpenSSL's)
  int max_version = 0;                // e.g. TLS1_2_VERSION (0: the highest OpenSSL speaks)
};

struct TlsClientResult {
  bool handshake_ok = false;
  std::string error;   // why the handshake or the exchange failed
  std::string alpn;    // negotiated
  std::string cipher;  // negotiated (OpenSSL's name, e.g. "TLS_AES_128_GCM_SHA256")
  bool resumed = false;
  std::string server_cn;           // the server certificate's subject CN
  std::string response;            // what came back (to EOF)
  SSL_SESSION* session = nullptr;  // owned by the caller (SSL_SESSION_free), for resumption
};

TlsClientResult tlsRequest(uint16_t port, const TlsClientOptions& options);

}  // namespace ferry::itest
