#pragma once
// A blocking raw-socket HTTP/1.1 client for tests and benchmarks: you control every byte that
// is sent (partial bodies, raw chunked framing, pipelining) and read responses with
// deadlines. Responses are parsed with llhttp (Content-Length, chunked and close-delimited).
//
//   HttpClient c;
//   ASSERT_TRUE(c.connect(port).isOk());
//   c.sendRequest("POST", "/v1/stream/s", {{"content-type", "text/plain"}}, "abc");
//   auto r = c.readResponse(5s);   // r->status, r->header("stream-next-offset"), r->body
//
// Streaming responses (SSE, long bodies): readResponseHead(), then readBodyUntil("\n\n") for
// each event; readSome() returns raw socket bytes without parsing. One response is read at a
// time; not thread-safe.
//
// https listeners: setTls() before connect() makes the connection TLS (verified, ALPN
// http/1.1); everything above it (send, readSome, isClosedByPeer, ...) works on the decrypted
// bytes, so the same test code runs over both transports.

#include <llhttp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/common/status.h"

struct ssl_st;
struct ssl_ctx_st;

namespace ferry::testing {

// TLS to an https listener: the server certificate is verified against `ca_file` for the IP
// 127.0.0.1 (or `server_name`, sent as SNI and checked as a DNS name), and the client
// certificate is presented when given (mTLS; both files or neither).
struct ClientTls {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string server_name;  // empty: the certificate must name IP 127.0.0.1
};

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpResponse {
  int status = 0;
  Headers headers;  // names lower-cased, in arrival order
  std::string body;
  bool complete = false;  // the whole message was read

  // The first value of `name` (any case), or nullptr.
  const std::string* header(std::string_view name) const;
  std::string headerOr(std::string_view name, std::string fallback = "") const;
};

class HttpClient {
 public:
  using Ms = std::chrono::milliseconds;

  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // TLS for the next connect() (nullopt: plain TCP, the default).
  void setTls(std::optional<ClientTls> tls) { tls_ = std::move(tls); }
  bool usesTls() const { return tls_.has_value(); }

  // Connects to 127.0.0.1:`port` (and completes the TLS handshake when setTls() asked for it).
  Status connect(uint16_t port, Ms timeout = Ms(5000));
  void close();
  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  // Sends raw bytes (all of them, or an error: e.g. the peer reset the connection).
  Status send(std::string_view bytes, Ms timeout = Ms(5000));
  // Sends a request built by buildRequest(); a HEAD request makes the next response bodiless.
  Status sendRequest(std::string_view method, std::string_view path, const Headers& headers = {},
                     std::string_view body = {});
  // "METHOD path HTTP/1.1" + Host (unless given) + headers + Content-Length (when there is a
  // body, or for POST/PUT; not when a transfer-encoding header is given) + body.
  std::string buildRequest(std::string_view method, std::string_view path, const Headers& headers,
                           std::string_view body) const;

  // Reads one whole response. On failure (timeout, connection closed or reset before the
  // end), partial() holds what was read of it.
  StatusOr<HttpResponse> readResponse(Ms timeout = Ms(5000));
  // Reads status and headers only; the body follows with readBodyUntil() / readResponse().
  StatusOr<HttpResponse> readResponseHead(Ms timeout = Ms(5000));
  // Reads decoded body bytes of the current response until the bytes not yet returned contain
  // `needle`; returns them up to and including the needle.
  StatusOr<std::string> readBodyUntil(std::string_view needle, Ms timeout = Ms(5000));
  const HttpResponse& partial() const { return current_; }

  // Raw bytes from the socket (after any bytes buffered but not parsed yet), waiting up to
  // `timeout` for the first; empty on timeout or end of stream.
  std::string readSome(Ms timeout = Ms(5000));
  // True once the peer closed (FIN) or reset the connection within `timeout`. Bytes that
  // arrive meanwhile are kept for readSome().
  bool isClosedByPeer(Ms timeout = Ms(5000));
  // The connection ended with ECONNRESET (an RST from the peer).
  bool wasReset() const { return reset_; }

 private:
  static int onHeaderField(llhttp_t* p, const char* at, size_t len);
  static int onHeaderValue(llhttp_t* p, const char* at, size_t len);
  static int onHeadersComplete(llhttp_t* p);
  static int onBody(llhttp_t* p, const char* at, size_t len);
  static int onMessageComplete(llhttp_t* p);

  void beginResponse();
  // Parses buffered bytes; false on a parse error (status in `error`).
  bool parseBuffered(Status& error);
  // Waits for and reads more bytes into raw_; false on timeout. Sets eof_ at end of stream.
  bool fill(std::chrono::steady_clock::time_point deadline);
  template <typename Done>
  Status readUntil(Done done, Ms timeout);
  Status handshake(std::chrono::steady_clock::time_point deadline);
  // One read from the socket or the TLS session into raw_ (the socket is readable or TLS has
  // buffered bytes).
  void readOnce();

  std::optional<ClientTls> tls_;
  ssl_ctx_st* ssl_ctx_ = nullptr;
  ssl_st* ssl_ = nullptr;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::string raw_;  // received, not yet parsed
  bool eof_ = false;
  bool reset_ = false;

  llhttp_t parser_;
  llhttp_settings_t settings_;
  HttpResponse current_;
  bool in_response_ = false;
  bool head_done_ = false;
  bool in_field_ = false;
  bool expect_head_response_ = false;
  size_t body_returned_ = 0;  // body bytes already returned by readBodyUntil
};

// One request on a new connection (TLS when `tls` is given); returns the whole response.
StatusOr<HttpResponse> httpRequest(uint16_t port, std::string_view method, std::string_view path,
                                   const Headers& headers = {}, std::string_view body = {},
                                   std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                   const ClientTls* tls = nullptr);

}  // namespace ferry::testing
