#pragma once
// Runs a test's raw HTTP/1.1 request bytes over HTTP/2: the bytes are parsed as they are fed
// (llhttp, any split, several requests in a row) and each request becomes a stream on an
// Http2Client: its head becomes HEADERS (Host -> :authority, the connection-specific fields
// of RFC 9113 section 8.2.2 dropped, chunked framing undone), its body DATA as the bytes
// arrive, its end END_STREAM. So a test that builds requests byte by byte (rawRequest(), a
// chunked upload sent in pieces) runs unchanged over both protocols; what only HTTP/1.1 has
// (chunk extensions, the framing itself) does not reach the server. Requests fed together are
// concurrent streams: unlike pipelined HTTP/1.1 requests, the server may handle them in any
// order.

#include <llhttp.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "integration/harness/http2_client.h"
#include "proxy/common/status.h"

namespace ferry::testing {

class Http1ToHttp2 {
 public:
  explicit Http1ToHttp2(Http2Client& client);
  Http1ToHttp2(const Http1ToHttp2&) = delete;
  Http1ToHttp2& operator=(const Http1ToHttp2&) = delete;

  // Feeds request bytes; submits and sends what they complete. An error when they do not
  // parse as HTTP/1.1 requests or the client failed to send.
  Status feed(std::string_view bytes);
  // The streams opened so far, in request order.
  const std::vector<int32_t>& streams() const { return streams_; }
  // Starts over (a new connection): the parser expects a new request.
  void reset();

 private:
  static int onMethod(llhttp_t* p, const char* at, size_t len);
  static int onUrl(llhttp_t* p, const char* at, size_t len);
  static int onHeaderField(llhttp_t* p, const char* at, size_t len);
  static int onHeaderValue(llhttp_t* p, const char* at, size_t len);
  static int onHeadersComplete(llhttp_t* p);
  static int onBody(llhttp_t* p, const char* at, size_t len);
  static int onMessageComplete(llhttp_t* p);

  Http2Client& client_;
  llhttp_t parser_;
  llhttp_settings_t settings_;
  std::vector<int32_t> streams_;
  // The request being parsed.
  std::string method_, url_;
  Headers headers_;
  bool in_field_ = false;
  bool body_open_ = false;  // its stream waits for DATA / END_STREAM
  Status error_;            // the first error a callback met
};

}  // namespace ferry::testing
