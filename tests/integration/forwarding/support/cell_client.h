#pragma once
// A client of the cell in the protocol the test runs over: HTTP/1.1 (HttpClient) or HTTP/2
// (Http2Client, one stream per request, h2c with prior knowledge or h2 by ALPN over TLS). It
// has the HttpClient calls the forwarding tests make, so one test body runs over both:
//
//   CellClient c;
//   connectTo(c, ferry);                       // the fixture picks protocol and TLS
//   c.sendRequest("GET", "/v1/stream/s?offset=-1&live=sse");
//   auto head = c.readResponseHead();          // then c.readBodyUntil("\n\n") per event
//
// Over HTTP/2, send() takes raw HTTP/1.1 request bytes and runs them as streams
// (Http1ToHttp2), responses are read in request order (the oldest unread stream first), and
// leave() resets the stream instead of closing the connection. Checks that only HTTP/2 has
// (a stream reset, GOAWAY) go through http2().

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "integration/harness/http1_to_http2.h"
#include "integration/harness/http2_client.h"
#include "integration/harness/http_client.h"
#include "proxy/common/status.h"

namespace ferry::fwdtest {

class CellClient {
 public:
  using Ms = std::chrono::milliseconds;

  CellClient();
  ~CellClient();
  CellClient(const CellClient&) = delete;
  CellClient& operator=(const CellClient&) = delete;

  // For the next connect(): HTTP/2 or HTTP/1.1, TLS or not.
  void setProtocol(bool http2, std::optional<testing::ClientTls> tls);
  bool usesHttp2() const { return http2_; }

  Status connect(uint16_t port, Ms timeout = Ms(5000));
  void close();
  bool connected() const { return http2_ ? h2_->connected() : h1_.connected(); }

  // Raw HTTP/1.1 request bytes (any split; over HTTP/2 each request they hold is a stream).
  Status send(std::string_view bytes);
  Status sendRequest(std::string_view method, std::string_view path,
                     const testing::Headers& headers = {}, std::string_view body = {});

  // As HttpClient's, for the response read next (over HTTP/2: the oldest stream not read
  // to its end).
  StatusOr<testing::HttpResponse> readResponse(Ms timeout = Ms(5000));
  StatusOr<testing::HttpResponse> readResponseHead(Ms timeout = Ms(5000));
  StatusOr<std::string> readBodyUntil(std::string_view needle, Ms timeout = Ms(5000));
  // What was read of the last response read.
  const testing::HttpResponse& partial() const;
  // True once the peer ended what the client reads within `timeout`: the connection (both
  // protocols) or, over HTTP/2, the stream being read (RST_STREAM or its end).
  bool isClosedByPeer(Ms timeout = Ms(5000));
  // The client abandons the request it sent last: over HTTP/1.1 by closing the connection (the
  // only way), over HTTP/2 by RST_STREAM CANCEL (RFC 9113 section 8.7), the connection kept.
  void leave();

  // HTTP/2 only: the client and the stream read next (or last read).
  testing::Http2Client& http2() { return *h2_; }
  int32_t currentStream() const;

 private:
  bool http2_ = false;
  std::optional<testing::ClientTls> tls_;
  testing::HttpClient h1_;
  std::unique_ptr<testing::Http2Client> h2_;
  std::unique_ptr<testing::Http1ToHttp2> raw_;
  std::deque<int32_t> unread_;  // streams whose responses are not read to the end, in order
  int32_t last_read_ = 0;
  size_t streams_seen_ = 0;  // of raw_->streams(), already queued
};

}  // namespace ferry::fwdtest
