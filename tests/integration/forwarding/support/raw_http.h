#pragma once
// Raw HTTP/1.1 exchanges for byte-level comparisons: the contract says a 409 that is not
// forwarded reaches the client unchanged (status, headers, body), so the tests compare what the
// instance sends directly with what ferry passes through, line by line. The same request can
// be run over HTTP/2 (rawExchangeHttp2): its response comes back in the same shape.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "integration/harness/http_client.h"
#include "proxy/common/status.h"

namespace ferry::fwdtest {

struct RawResponse {
  std::string status_line;
  std::vector<std::string> header_lines;  // as received, without CRLF
  std::string body;
  std::string raw;
  bool http2 = false;  // status_line is "HTTP/2 <code>" (HTTP/2 has no reason phrase)
};

// Connects to 127.0.0.1:`port` (over TLS when `tls` is given), sends `request` (raw bytes) and
// reads one Content-Length framed (or bodiless) response.
StatusOr<RawResponse> rawExchange(uint16_t port, const std::string& request,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                  const testing::ClientTls* tls = nullptr);

// The same over HTTP/2 (h2c with prior knowledge, or h2 by ALPN over TLS): `request` is run as
// a stream (testing::Http1ToHttp2) and the response is rendered as HTTP/1.1-like text:
// "HTTP/2 <status>", then "name: value" lines in arrival order (names lower-case, RFC 9113
// section 8.2.1), then the body.
StatusOr<RawResponse> rawExchangeHttp2(uint16_t port, const std::string& request,
                                       std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                       const testing::ClientTls* tls = nullptr);

// `r` (an HTTP/1.1 response) as an HTTP/2 response of the same message would read in a
// RawResponse: "HTTP/2 <code>" and lower-case header names. What ferry sends over HTTP/2 is
// compared with this, since the two differences are the protocol's, not ferry's.
RawResponse asHttp2(const RawResponse& r);

// Header lines minus the hop-by-hop ones ferry must recompute or drop (RFC 9110 §7.6.1):
// Connection, Keep-Alive, Transfer-Encoding, and the names a Connection header lists.
std::vector<std::string> endToEndLines(const RawResponse& r);

}  // namespace ferry::fwdtest
