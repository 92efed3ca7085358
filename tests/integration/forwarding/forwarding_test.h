#pragma once
// Shared fixture and helpers of the owner-forwarding integration tests. Each test gets a fresh
// cell of three members (inst-1..inst-3): emulator + ferry each, peers published at the ferries.
//
// Transports: the contract tests run four ways (one ctest entry each), as TEST_P of
// OverTransports<Fixture> instantiated with FORWARDING_OVER_TRANSPORTS(Suite): names end in
// /Plain (http peers, plain listeners), /Tls (https peers, every listener TLS with mTLS
// required, forwards over mTLS), /H2c (the Plain cell, the client speaks HTTP/2 with prior
// knowledge) and /H2Tls (the Tls cell, the client speaks h2 chosen by ALPN). The test client
// is a client of the cell like any other: it reaches a ferry through viaFerry() / connectTo()
// (a CellClient) / rawVia(), which speak the transport's protocol (over TLS: verified against
// the cell CA, with the cell's client certificate). In those four, forwards between ferries are
// HTTP/1.1 whatever the client speaks; FORWARDING_OVER_TRANSPORTS also runs each test with
// forwards over HTTP/2 (issue 13): /PlainH2Owner and /H2cH2Owner (h2c with prior knowledge,
// owner_protocol: h2), /TlsH2Owner and /H2TlsH2Owner (https peers, owner_protocol left at auto:
// ALPN picks h2). A test whose subject exists only in HTTP/1.1 uses
// FORWARDING_OVER_HTTP1_TRANSPORTS (Plain and Tls, and their h2-owner twins) and says why; one
// whose owner side is inherently HTTP/1.1 uses FORWARDING_OVER_HTTP1_OWNERS (the first four) and
// says why. Tests that point a ferry at a plain stand-in owner (CannedUpstream, an instance
// without a ferry: both HTTP/1.1 only) run on plain listeners only, over both client protocols
// (FORWARDING_OVER_PLAIN_LISTENERS: /Plain, /H2c), with HTTP/1.1 owners.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tests/integration/forwarding/support/cell_client.h"
#include "tests/integration/forwarding/support/forwarding_cell.h"
#include "tests/integration/forwarding/support/raw_http.h"

namespace ferry::fwdtest {

using testing::http2Request;
using testing::httpRequest;

inline std::string skipped(const std::string& reason) {
  return "ferry_forward_skipped_total{reason=\"" + reason + "\"}";
}
inline std::string perOwner(const std::string& metric, const std::string& owner) {
  return metric + "{owner=\"" + owner + "\"}";
}

// "POST /v1/stream/<s>" etc. as raw bytes (Content-Length framed).
inline std::string rawRequest(const std::string& method, const std::string& path,
                              const std::string& body = "", const std::string& extra = "") {
  std::string r = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra;
  if (!body.empty() || method == "POST" || method == "PUT") {
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

// Body bytes whose every position matters (so a lost, repeated or reordered piece changes the
// hash): a repeating 251-byte pattern of printable characters, offset by `seed`.
inline std::string patternBody(size_t n, int seed = 0) {
  std::string s(n, ' ');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('!' + (i + seed) % 251 % 94);
  return s;
}

class ForwardingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CellOptions options = cellOptions();
    options.transport = transport();
    auto c = ForwardingCell::create(options);
    ASSERT_TRUE(c.isOk()) << c.status().message();
    cell_ = std::move(*c);
  }
  void TearDown() override { cell_.reset(); }
  virtual CellOptions cellOptions() const { return {}; }
  virtual Transport transport() const { return Transport::kPlain; }

  // One request to `ferry`'s listener over the test's transport (a new connection).
  StatusOr<HttpResponse> viaFerry(Ferry& ferry, std::string_view method, std::string_view path,
                                  const Headers& headers = {}, std::string_view body = {},
                                  Ms timeout = Ms(10000)) {
    if (isHttp2(transport())) {
      return http2Request(ferry.port(), method, path, headers, body, timeout, cell_->clientTls());
    }
    return httpRequest(ferry.port(), method, path, headers, body, timeout, cell_->clientTls());
  }
  // Connects `client` to `ferry`'s listener over the test's transport.
  Status connectTo(CellClient& client, Ferry& ferry) {
    client.setProtocol(isHttp2(transport()),
                       cell_->clientTls() ? std::optional(*cell_->clientTls()) : std::nullopt);
    return client.connect(ferry.port());
  }
  // rawExchange() with `ferry` over the test's transport (over HTTP/2: rawExchangeHttp2()).
  StatusOr<RawResponse> rawVia(Ferry& ferry, const std::string& request) {
    if (isHttp2(transport())) {
      return rawExchangeHttp2(ferry.port(), request, Ms(10000), cell_->clientTls());
    }
    return rawExchange(ferry.port(), request, Ms(10000), cell_->clientTls());
  }

  // Creates `stream` at member `i`'s emulator directly (no ferry); the next offset.
  std::string createAt(size_t i, const std::string& stream,
                       const std::string& content_type = "text/plain") {
    auto r = httpRequest(cell_->emulator(i).port(), "PUT", "/v1/stream/" + stream,
                         {{"content-type", content_type}});
    EXPECT_TRUE(r.isOk() && r->status == 201) << (r.isOk() ? r->body : r.status().message());
    return r.isOk() ? r->headerOr("stream-next-offset") : "";
  }
  // Appends directly at member `i`'s emulator; the next offset.
  std::string appendAt(size_t i, const std::string& stream, const std::string& body) {
    auto r = httpRequest(cell_->emulator(i).port(), "POST", "/v1/stream/" + stream,
                         {{"content-type", "text/plain"}}, body);
    EXPECT_TRUE(r.isOk() && r->status / 100 == 2) << (r.isOk() ? r->body : r.status().message());
    return r.isOk() ? r->headerOr("stream-next-offset") : "";
  }
  std::vector<Applied> appliedAt(size_t i, const std::string& stream) {
    auto a = cell_->emulator(i).applied(stream);
    EXPECT_TRUE(a.isOk()) << a.status().message();
    return a.isOk() ? *a : std::vector<Applied>{};
  }

  std::unique_ptr<ForwardingCell> cell_;
};

// A fixture run once per transport (see the top of this file).
template <typename Fixture>
class OverTransports : public Fixture, public ::testing::WithParamInterface<Transport> {
 protected:
  Transport transport() const override { return this->GetParam(); }
};

inline std::string transportName(const ::testing::TestParamInfo<Transport>& info) {
  return toString(info.param);
}
// GoogleTest prints the parameter with this (found by ADL) in test listings and failures.
inline void PrintTo(Transport t, std::ostream* os) { *os << toString(t); }

#define FORWARDING_OVER_TRANSPORTS(Suite)                                                         \
  INSTANTIATE_TEST_SUITE_P(                                                                       \
      Transports, Suite,                                                                          \
      ::testing::Values(Transport::kPlain, Transport::kTls, Transport::kH2c, Transport::kH2Tls,   \
                        Transport::kPlainH2Owner, Transport::kTlsH2Owner, Transport::kH2cH2Owner, \
                        Transport::kH2TlsH2Owner),                                                \
      transportName)
// The four client transports with HTTP/1.1 owners only, for a test whose owner side is
// inherently HTTP/1.1 (say why at the use).
#define FORWARDING_OVER_HTTP1_OWNERS(Suite)                                                      \
  INSTANTIATE_TEST_SUITE_P(                                                                      \
      Transports, Suite,                                                                         \
      ::testing::Values(Transport::kPlain, Transport::kTls, Transport::kH2c, Transport::kH2Tls), \
      transportName)
// Plain listeners, both protocols (Plain, H2c): for a test that points a ferry at a plain
// stand-in owner (a bare instance, a scripted socket; http peer URLs, which a TLS cell refuses).
#define FORWARDING_OVER_PLAIN_LISTENERS(Suite) \
  INSTANTIATE_TEST_SUITE_P(Transports, Suite,  \
                           ::testing::Values(Transport::kPlain, Transport::kH2c), transportName)
// H2c and H2Tls only, for a test whose subject is HTTP/2 itself (streams of one connection).
#define FORWARDING_OVER_HTTP2_TRANSPORTS(Suite)                                                 \
  INSTANTIATE_TEST_SUITE_P(Transports, Suite,                                                   \
                           ::testing::Values(Transport::kH2c, Transport::kH2Tls,                \
                                             Transport::kH2cH2Owner, Transport::kH2TlsH2Owner), \
                           transportName)
// Plain and Tls only (and their h2-owner twins), for a test whose subject is the client's
// HTTP/1.1 itself (say why at the use).
#define FORWARDING_OVER_HTTP1_TRANSPORTS(Suite)                                                 \
  INSTANTIATE_TEST_SUITE_P(Transports, Suite,                                                   \
                           ::testing::Values(Transport::kPlain, Transport::kTls,                \
                                             Transport::kPlainH2Owner, Transport::kTlsH2Owner), \
                           transportName)

// Asserts the 503 forward_failed a client gets when the owner failed after the request was
// sent and may have applied it (docs/forwarding.md, Failures): Retry-After 1, a no-store JSON
// error naming forward_failed (never the 409, which would invite a replay).
inline void expectForwardFailed503(const HttpResponse& r) {
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.headerOr("retry-after"), "1");
  EXPECT_EQ(r.headerOr("cache-control"), "no-store");
  EXPECT_EQ(r.headerOr("content-type"), "application/json");
  EXPECT_NE(r.body.find("\"forward_failed\""), std::string::npos) << r.body;
}

// Asserts that `via` (a ferry) answered exactly what `direct` (the instance) answered, but for
// hop-by-hop framing fields and the X-Request-Id ferry gives every response (exactly one).
inline void expectSameResponse(const RawResponse& direct, const RawResponse& via) {
  if (via.http2 && !direct.http2) {
    // Over HTTP/2 the status line has no reason phrase and names are lower-case: compare with
    // the instance's answer as HTTP/2 carries it.
    expectSameResponse(asHttp2(direct), via);
    return;
  }
  if (std::getenv("FERRY_TEST_DUMP") != nullptr) {
    std::cerr << "direct:\n" << direct.raw << "\nvia ferry:\n" << via.raw << "\n";
  }
  EXPECT_EQ(via.status_line, direct.status_line);
  std::vector<std::string> via_lines = endToEndLines(via);
  const auto is_request_id = [](const std::string& line) {
    constexpr std::string_view kName = "x-request-id:";
    if (line.size() < kName.size()) return false;
    for (size_t i = 0; i < kName.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(line[i])) != kName[i]) return false;
    }
    return true;
  };
  const auto ids = std::count_if(via_lines.begin(), via_lines.end(), is_request_id);
  EXPECT_EQ(ids, 1) << via.raw;
  via_lines.erase(std::remove_if(via_lines.begin(), via_lines.end(), is_request_id),
                  via_lines.end());
  EXPECT_EQ(via_lines, endToEndLines(direct)) << "direct:\n"
                                              << direct.raw << "\nvia ferry:\n"
                                              << via.raw;
  EXPECT_EQ(via.body, direct.body);
}

}  // namespace ferry::fwdtest
