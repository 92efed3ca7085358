#pragma once
// The codec interfaces: bytes in, events out; encoders write bytes into an output Buffer.
// Codecs never touch a socket: the connection hands them what it read and flushes what they
// wrote. HTTP/1.1 (http1/) implements them with llhttp; HTTP/2 (nghttp2) will implement the
// same interfaces, so the connection manager, the router and every filter stay unchanged.
//
// Downstream (ferry is the server):  ServerCodec --decodes--> RequestDecoder (the active stream)
//                                    active stream --encodes--> ResponseEncoder
// Upstream (ferry is the client):    upstream request --encodes--> RequestEncoder (a pool's stream)
//                                    ClientCodec --decodes--> ResponseDecoder (upstream request)

#include <cstdint>

#include "proxy/buffer/buffer.h"
#include "proxy/common/status.h"
#include "proxy/http/header_map.h"

namespace ferry::http {

// ---- Downstream side ------------------------------------------------------------------------

// Receives one request's events. Implemented by the active stream; owned by the connection
// manager. Called from ServerCodec::dispatch().
class RequestDecoder {
 public:
  virtual ~RequestDecoder() = default;
  // The request head is complete. `end_stream` = the request has no body.
  virtual void onRequestHeaders(RequestHeadersPtr headers, bool end_stream) = 0;
  // Body bytes as they arrive (chunk framing removed). The decoder may move them out of `data`.
  // `end_stream` = this is the last call for the request (data may be empty then).
  virtual void onRequestData(Buffer& data, bool end_stream) = 0;
};

// Writes one response. Obtained from ServerConnectionCallbacks::newStream.
class ResponseEncoder {
 public:
  virtual ~ResponseEncoder() = default;
  // A 1xx response (e.g. 100 Continue); may be called before encodeHeaders.
  virtual void encodeInformational(const ResponseHeaders& headers) = 0;
  // The final response head. Framing: Content-Length when the headers carry one, otherwise
  // chunked (HTTP/1.1 clients) or close-delimited (HTTP/1.0). `end_stream` = no body follows.
  virtual void encodeHeaders(const ResponseHeaders& headers, bool end_stream) = 0;
  // Body bytes; drains `data`. `end_stream` = the response is complete.
  virtual void encodeData(Buffer& data, bool end_stream) = 0;
  // True when the response, its head already sent, can be ended now without a cut: its body
  // is chunked (a last chunk ends it, RFC 9112 §7.1) or close-delimited (the close ends it).
  // A Content-Length body cannot end before its length (HTTP/2 would send END_STREAM).
  virtual bool canEndEarly() const { return false; }
};

// Implemented by the connection manager.
class ServerConnectionCallbacks {
 public:
  virtual ~ServerConnectionCallbacks() = default;
  // A new request starts; returns where its events go. `encoder` lives until the response
  // is complete or the connection closes.
  virtual RequestDecoder& newStream(ResponseEncoder& encoder) = 0;
};

// What a codec refused, for the counters in /stats (one series each). The HTTP status is
// separate: one kind may be answered with more than one status.
enum class CodecErrorKind {
  Malformed,         // any other malformed head (request or status line, fields, framing)
  HeadTooLarge,      // head over its byte limit (431)
  TooManyFields,     // more header fields than limits.max_request_headers (431)
  InvalidHost,       // Host or an absolute-form authority that is not uri-host [":" port]
  InvalidTarget,     // absolute-form that is not an http(s) URI ferry can forward
  UnknownMethod,     // a method token llhttp does not know (501)
  BodyFraming,       // after the head: bad chunk framing, e.g. no CRLF after chunk data
  ChunkLineTooLong,  // a chunk-size line (size and extensions) over kMaxChunkLineBytes
  InvalidStatus,     // a response status code outside 100..599
};

// Error from ServerCodec::dispatch: the status to answer with (400, 431, 413, 501) before the
// connection closes, and a detail for logs and counters.
struct CodecError {
  int http_status = 400;
  std::string detail;
  CodecErrorKind kind = CodecErrorKind::Malformed;
};

class ServerCodec {
 public:
  virtual ~ServerCodec() = default;
  // Parses what `data` holds and drains what it consumed. Returns false on malformed input;
  // then error() says what to answer, and the connection must close after the answer.
  // HTTP/1.1 pipelining: after one request is complete the codec stops consuming until its
  // response is complete (leaving later bytes in `data`); call dispatch again then.
  virtual bool dispatch(Buffer& data) = 0;
  virtual const CodecError& error() const = 0;
  // True when a request's head has started but not finished (request-head timeout applies).
  virtual bool requestHeadInProgress() const = 0;
  // True while a request was decoded and its response is not yet complete.
  virtual bool streamActive() const = 0;
  // True when the connection must close after the current response (Connection: close,
  // HTTP/1.0 without keep-alive, close-delimited response, or a request body left unread).
  virtual bool closeAfterResponse() const = 0;
  // Drain: the connection closes after the current (or next) response, whose head says so
  // (`Connection: close`, RFC 9112 §9.6) when it has not been written yet.
  virtual void closeAfterCurrentResponse() = 0;
};

// ---- Upstream side --------------------------------------------------------------------------

// Receives one response's events. Implemented by the router's upstream request.
class ResponseDecoder {
 public:
  virtual ~ResponseDecoder() = default;
  virtual void onInformational(ResponseHeadersPtr headers) = 0;
  virtual void onResponseHeaders(ResponseHeadersPtr headers, bool end_stream) = 0;
  virtual void onResponseData(Buffer& data, bool end_stream) = 0;
};

class RequestEncoder {
 public:
  virtual ~RequestEncoder() = default;
  // Framing as for responses: Content-Length if the headers carry one, chunked otherwise
  // unless `end_stream` (no body: neither). Adds Host from `authority` when absent.
  virtual void encodeHeaders(const RequestHeaders& headers, bool end_stream) = 0;
  virtual void encodeData(Buffer& data, bool end_stream) = 0;
};

class ClientCodec {
 public:
  virtual ~ClientCodec() = default;
  // Starts a request whose response goes to `decoder`. HTTP/1.1: one at a time.
  virtual RequestEncoder& newStream(ResponseDecoder& decoder) = 0;
  // Parses response bytes; false on malformed input (then the connection must close).
  virtual bool dispatch(Buffer& data) = 0;
  // The upstream closed its side. Completes a close-delimited response (returns true) or
  // reports a response cut short / never started (returns false).
  virtual bool onConnectionClosed() = 0;
  // True when the last response allows reusing the connection.
  virtual bool keepAlive() const = 0;
  // Bytes of the current request written into the output so far (0 = nothing sent yet).
  virtual uint64_t requestBytesEncoded() const = 0;
  // True once the current response's head has been decoded.
  virtual bool responseStarted() const = 0;
  // After dispatch() returned false: what was wrong with the response.
  virtual CodecErrorKind errorKind() const = 0;
};

}  // namespace ferry::http
