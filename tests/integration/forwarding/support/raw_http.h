#pragma once
// Raw HTTP/1.1 exchanges for byte-level comparisons: the contract says a 409 that is not
// forwarded reaches the client unchanged (status, headers, body), so the tests compare what the
// instance sends directly with what ferry passes through, line by line.

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
};

// Connects to 127.0.0.1:`port` (over TLS when `tls` is given), sends `request` (raw bytes) and
// reads one Content-Length framed (or bodiless) response.
StatusOr<RawResponse> rawExchange(uint16_t port, const std::string& request,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                  const testing::ClientTls* tls = nullptr);

// Header lines minus the hop-by-hop ones ferry must recompute or drop (RFC 9110 §7.6.1):
// Connection, Keep-Alive, Transfer-Encoding, and the names a Connection header lists.
std::vector<std::string> endToEndLines(const RawResponse& r);

}  // namespace ferry::fwdtest
