#pragma once
// A blocking HTTP/2 client for tests, on nghttp2's client session (RFC 9113): h2c with prior
// knowledge over plain TCP (section 3.3), or h2 chosen by ALPN over TLS (section 3.2), verified
// with the same ClientTls as HttpClient. Every wait has a deadline; nothing runs between calls
// (the session advances only inside them), so a test sees frames in the order it asks.
//
//   Http2Client c;
//   ASSERT_TRUE(c.connect(port).isOk());
//   auto id = c.submitRequest("POST", "/v1/stream/s", {{"content-type", "text/plain"}}, "abc");
//   auto r = c.readResponse(*id, 5s);   // r->status, r->header("stream-next-offset"), r->body
//
// Several streams may be open at once on the connection (submit several, read them in any
// order). Streaming responses (SSE): readResponseHead(id), then readBodyUntil(id, "\n\n") per
// event. A request body can be sent in pieces: submitRequest(..., end_stream = false), then
// sendData(). resetStream() sends RST_STREAM; what the server sent of its own (RST_STREAM with
// its error code, GOAWAY with its last stream id) is kept for the test to check.
//
// Responses are HttpResponse: pseudo-headers are not in `headers` (status has :status), names
// arrive lower-case (section 8.2.1), and nghttp2 enforces the message rules of section 8 on what
// the server sends (a connection-specific header field, a Content-Length that disagrees with
// the DATA, an upper-case name: the stream is reset with PROTOCOL_ERROR, which the test sees).

#include <nghttp2/nghttp2.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "integration/harness/client_transport.h"
#include "integration/harness/http_client.h"
#include "proxy/common/status.h"

namespace ferry::testing {

class Http2Client {
 public:
  using Ms = std::chrono::milliseconds;

  // What the client knows of one stream.
  struct Stream {
    HttpResponse response;   // complete: END_STREAM arrived
    Headers trailers;        // a trailer section after the body, if any
    bool head_done = false;  // the final (non-1xx) response head arrived
    bool closed = false;     // the stream is closed (ended both ways, or reset by either side)
    std::optional<uint32_t> reset_by_peer;  // RST_STREAM received: its error code
    uint32_t close_error = 0;               // the error code nghttp2 closed it with (0: NO_ERROR)
    size_t body_returned = 0;               // body bytes already returned by readBodyUntil()
    // The request body not yet handed to nghttp2, and whether the caller ended it.
    std::string pending_body;
    bool body_end = true;
    bool deferred = false;
  };

  Http2Client();
  ~Http2Client();
  Http2Client(const Http2Client&) = delete;
  Http2Client& operator=(const Http2Client&) = delete;

  // TLS for the next connect() (nullopt: h2c with prior knowledge, the default).
  void setTls(std::optional<ClientTls> tls) { tls_ = std::move(tls); }
  bool usesTls() const { return tls_.has_value(); }

  // Connects to 127.0.0.1:`port` and sends the connection preface and SETTINGS. Over TLS the
  // server must select h2 by ALPN (the only protocol offered): else an error.
  Status connect(uint16_t port, Ms timeout = Ms(5000));
  void close();
  // Connected, and new streams can be opened: the server has neither closed the connection nor
  // sent GOAWAY, and the session has not failed.
  bool connected() const {
    return transport_.connected() && !eof_ && !goaway_ && session_error_.empty();
  }

  // Opens a stream: HEADERS (:method, :scheme, :authority from a Host header or
  // 127.0.0.1:port, :path, then `headers` with names lower-cased, minus the connection-specific
  // fields of RFC 9113 section 8.2.2), then `body`. With end_stream the request ends there
  // (content-length added for a body or a POST/PUT, as HttpClient does); else more comes with
  // sendData(). Returns the stream id.
  StatusOr<int32_t> submitRequest(std::string_view method, std::string_view path,
                                  const Headers& headers = {}, std::string_view body = {},
                                  bool end_stream = true);
  // Sends more request body on `id` (END_STREAM with `end_stream`); waits until nghttp2 has
  // written all of it (flow control may hold it until the server opens its window).
  Status sendData(int32_t id, std::string_view bytes, bool end_stream, Ms timeout = Ms(5000));
  // Sends RST_STREAM on `id` (RFC 9113 section 6.4), CANCEL unless told.
  Status resetStream(int32_t id, uint32_t error_code = NGHTTP2_CANCEL);
  // Writes `bytes` to the connection as they are, after what the session queued: a test of
  // the server's handling of frames nghttp2 would never send (a PING on a stream, ...).
  Status sendRaw(std::string_view bytes);
  // Sends PING and waits for its ACK: the server read everything sent before it.
  Status ping(Ms timeout = Ms(5000));

  // Reads the whole response of `id`. On failure (timeout, stream reset, connection closed
  // before END_STREAM) stream(id).response holds what arrived.
  StatusOr<HttpResponse> readResponse(int32_t id, Ms timeout = Ms(5000));
  // Reads the response head only; the body follows with readBodyUntil() / readResponse().
  StatusOr<HttpResponse> readResponseHead(int32_t id, Ms timeout = Ms(5000));
  // Reads body bytes of `id` until the bytes not yet returned contain `needle`; returns them
  // up to and including the needle.
  StatusOr<std::string> readBodyUntil(int32_t id, std::string_view needle, Ms timeout = Ms(5000));
  // Waits until `id` is closed; the RST_STREAM error code when the server reset it, nullopt
  // when it ended normally or the time ran out (see stream(id).closed).
  std::optional<uint32_t> waitForStreamReset(int32_t id, Ms timeout = Ms(5000));
  // A stream this client opened (an empty one for an unknown id).
  const Stream& stream(int32_t id) const;

  // True once the server closed (FIN, close_notify) or reset the connection within `timeout`.
  bool isClosedByPeer(Ms timeout = Ms(5000));
  bool wasReset() const { return transport_.wasReset(); }
  // GOAWAY received (RFC 9113 section 6.8), its last stream id and error code.
  bool goawayReceived() const { return goaway_.has_value(); }
  int32_t goawayLastStreamId() const { return goaway_ ? goaway_->first : -1; }
  uint32_t goawayErrorCode() const { return goaway_ ? goaway_->second : 0; }
  // Waits up to `timeout` for a GOAWAY; true when one arrived.
  bool waitForGoaway(Ms timeout = Ms(5000));
  // A SETTINGS value the server sent (its default until it sent one).
  uint32_t remoteSetting(nghttp2_settings_id id) const;

  // Advances the session (writes what it queued, reads what arrives) until done() or the
  // deadline; an error when the time ran out, the connection ended first or the session failed.
  Status pump(const std::function<bool()>& done, Ms timeout);

 private:
  static int onBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int onHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                      void* user);
  static int onFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int onDataChunk(nghttp2_session*, uint8_t flags, int32_t id, const uint8_t* data,
                         size_t len, void* user);
  static int onStreamClose(nghttp2_session*, int32_t id, uint32_t error_code, void* user);
  static ssize_t readRequestBody(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                                 uint32_t* flags, nghttp2_data_source*, void* user);

  // Writes what the session queued; false when the write failed (the connection is gone).
  bool flush(ClientTransport::Clock::time_point deadline);
  // "stream N reset by the server (RST_STREAM CANCEL)" etc.: why `id` will not complete.
  std::string streamFailure(int32_t id) const;

  std::optional<ClientTls> tls_;
  ClientTransport transport_;
  nghttp2_session* session_ = nullptr;
  uint16_t port_ = 0;
  std::map<int32_t, Stream> streams_;
  std::optional<std::pair<int32_t, uint32_t>> goaway_;
  bool eof_ = false;
  bool received_any_ = false;  // the server sent a byte (its preface) on this connection
  std::string session_error_;  // the first error of the session or the connection
  int pings_acked_ = 0;
};

// One request on a new HTTP/2 connection (TLS when `tls` is given); the whole response.
StatusOr<HttpResponse> http2Request(uint16_t port, std::string_view method, std::string_view path,
                                    const Headers& headers = {}, std::string_view body = {},
                                    std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                    const ClientTls* tls = nullptr);

}  // namespace ferry::testing
