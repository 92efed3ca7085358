#pragma once
// The codec interfaces: bytes in, events out; encoders write bytes into an output Buffer.
// Codecs never touch a socket: the connection hands them what it read and flushes what they
// wrote. HTTP/1.1 (http1/) implements them with llhttp, HTTP/2 (http2/) with nghttp2; the
// unit is the stream, so the connection manager, the router and every filter are the same for
// both. On HTTP/1.1 a connection carries one stream at a time.
//
// Downstream (ferry is the server):  ServerCodec --decodes--> RequestDecoder (the active stream)
//                                    active stream --encodes--> ResponseEncoder
// Upstream (ferry is the client):    upstream request --encodes--> RequestEncoder (a pool's stream)
//                                    ClientConnection --decodes--> ResponseDecoder (pool stream)
// Each side has a stream-events interface that is not bytes: StreamCallbacks (server) and
// ClientStreamCallbacks (client).

#include <cstdint>
#include <string>

#include "proxy/buffer/buffer.h"
#include "proxy/common/status.h"
#include "proxy/http/header_map.h"

namespace ferry::http {

// ---- Downstream side ------------------------------------------------------------------------

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
  Http2Protocol,     // HTTP/2: a connection error (GOAWAY) or a malformed stream
  Http2Flood,        // HTTP/2: a frame flood or rapid resets (GOAWAY ENHANCE_YOUR_CALM)
};

// Error from ServerCodec::dispatch: the status to answer with (400, 431, 413, 501) before the
// connection closes, and a detail for logs and counters. `http_status` 0: the codec wrote its
// own answer (HTTP/2 GOAWAY) into the output; flush it and close.
struct CodecError {
  int http_status = 400;
  std::string detail;
  CodecErrorKind kind = CodecErrorKind::Malformed;
};

// Why a stream ended before its response did.
enum class StreamResetReason {
  LocalReset,        // ferry cut the response (upstream failure after the head went out)
  RemoteReset,       // the client reset the stream (HTTP/2 RST_STREAM)
  ConnectionClosed,  // the connection closed with the stream open
  ProtocolError,     // the client broke the protocol on this stream
};

// Per-stream events from the codec that are not request bytes. Implemented by the active
// stream; registered with ResponseEncoder::setStreamCallbacks(). The codec makes no call after
// the response's end was encoded or resetStream() was called.
class StreamCallbacks {
 public:
  virtual ~StreamCallbacks() = default;
  // The stream ended before its response did (not called for ferry's own resetStream()).
  virtual void onStreamReset(StreamResetReason reason) = 0;
  // The response bytes this stream has waiting to be written rose above the high watermark /
  // fell back below the low one: pause / resume whatever feeds the response.
  virtual void onAboveWriteBufferHighWatermark() = 0;
  virtual void onBelowWriteBufferLowWatermark() = 0;
};

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

// Writes one stream's response, and controls the stream. Obtained from
// ServerConnectionCallbacks::onNewRequest; owned by the codec, valid until the response's end was
// encoded, resetStream() was called, or StreamCallbacks::onStreamReset() was raised.
class ResponseEncoder {
 public:
  virtual ~ResponseEncoder() = default;
  // Registers the stream's callbacks (once, right after onNewRequest returned).
  virtual void setStreamCallbacks(StreamCallbacks& callbacks) = 0;
  // A 1xx response (e.g. 100 Continue); may be called before encodeHeaders.
  virtual void encodeInformational(const ResponseHeaders& headers) = 0;
  // The final response head. HTTP/1.1 framing: Content-Length when the headers carry one,
  // otherwise chunked (HTTP/1.1 clients) or close-delimited (HTTP/1.0). HTTP/2: DATA frames,
  // END_STREAM at the end. `end_stream` = no body follows.
  virtual void encodeHeaders(const ResponseHeaders& headers, bool end_stream) = 0;
  // Body bytes; drains `data`. `end_stream` = the response is complete.
  virtual void encodeData(Buffer& data, bool end_stream) = 0;
  // Ends the response (after its head, and any body) with a trailer section (RFC 9110 §6.5):
  // HTTP/2 a HEADERS frame with END_STREAM; HTTP/1.1 chunked the fields after the last chunk
  // (RFC 9112 §7.1.2); any other framing has no place for them and just ends. Fields that
  // must not be trailers (isForbiddenTrailer) are dropped. The default just ends the body.
  virtual void encodeTrailers(const HeaderMap& trailers) {
    Buffer none;
    encodeData(none, true);
  }
  // True when the response, its head already sent, can be ended now without a cut: HTTP/1.1
  // chunked (a last chunk ends it, RFC 9112 §7.1) or close-delimited (the close ends it);
  // HTTP/2 always (END_STREAM). A Content-Length body cannot end before its length on
  // HTTP/1.1.
  virtual bool canEndEarly() const { return false; }
  // Ferry gives up on this response (a cut). HTTP/2: RST_STREAM for this stream only;
  // HTTP/1.1: the connection must close (ServerCodec::wantsClose() turns true), the client
  // sees a short body or a missing last chunk.
  virtual void resetStream() = 0;
  // Backpressure from the upstream side: stop / resume taking this request's body. HTTP/1.1
  // stops reading the socket (ServerConnectionCallbacks::readDisableConnection); HTTP/2 stops
  // returning flow-control credit for this stream only. The active stream calls it once per
  // change of its pause reasons (http/pause_reasons.h): true with the first, false when none
  // is left; HTTP/2 also counts nested calls, HTTP/1.1 does not.
  virtual void readDisable(bool disable) = 0;
};

// Implemented by the connection manager.
class ServerConnectionCallbacks {
 public:
  virtual ~ServerConnectionCallbacks() = default;
  // A new request starts; returns where its events go.
  virtual RequestDecoder& onNewRequest(ResponseEncoder& encoder) = 0;
  // HTTP/1.1: the connection's one stream asked to stop / resume reading the connection
  // (ResponseEncoder::readDisable): an on/off switch, not counted.
  virtual void readDisableConnection(bool disable) = 0;
  // A request refused by the codec alone, without a stream (HTTP/2: a malformed request on
  // one stream, answered with RST_STREAM or 400 by the codec; the connection lives on). For
  // the counters and the access log.
  virtual void onStreamRefused(const CodecError& error) {}
};

// One downstream connection's protocol. Created per connection (HTTP/1.1, or HTTP/2 chosen by
// ALPN or the client's preface), owned by the connection manager.
class ServerCodec {
 public:
  virtual ~ServerCodec() = default;
  // Parses what `data` holds and drains what it consumed. Returns false on a connection
  // error; then error() says what to answer, and the connection must close after the answer.
  // HTTP/1.1 pipelining: after one request is complete the codec stops consuming until its
  // response is complete (leaving later bytes in `data`); call dispatch again then.
  virtual bool dispatch(Buffer& data) = 0;
  virtual const CodecError& error() const = 0;
  // True when a request head has started but not finished (the request-head timeout applies):
  // HTTP/1.1 a partial head; HTTP/2 a header block waiting for its CONTINUATION, or (before
  // the first stream) the preface and SETTINGS.
  virtual bool requestHeadInProgress() const = 0;
  // True when the connection should close once no stream is active: HTTP/1.1 Connection:
  // close, HTTP/1.0 without keep-alive, a close-delimited or reset response, a request body
  // left unread; HTTP/2 after the final GOAWAY.
  virtual bool wantsClose() const = 0;
  // Drain, first step: HTTP/1.1 the current (or next) response's head says `Connection:
  // close` (RFC 9112 §9.6) when it has not been written yet; HTTP/2 GOAWAY with the highest
  // stream id (RFC 9113 §6.8), so the client stops opening streams.
  virtual void shutdownNotice() = 0;
  // Drain, final step: no new stream is taken. HTTP/2 GOAWAY with the last stream id taken.
  // Everything encoded so far is in the output when it returns: the connection may close
  // right after.
  virtual void goAway() = 0;
  // The connection's output rose above its high watermark / fell below the low one. HTTP/1.1
  // passes it to the stream; HTTP/2 stops / resumes writing frames (each stream's own
  // buffer then rises to its watermark).
  virtual void onAboveWriteBufferHighWatermark() = 0;
  virtual void onBelowWriteBufferLowWatermark() = 0;
  // "HTTP/1.1" or "HTTP/2".
  virtual std::string_view protocol() const = 0;
};

// ---- Upstream side --------------------------------------------------------------------------

// Receives one response's events. Implemented by the router's upstream request.
class ResponseDecoder {
 public:
  virtual ~ResponseDecoder() = default;
  virtual void onInformational(ResponseHeadersPtr headers) = 0;
  virtual void onResponseHeaders(ResponseHeadersPtr headers, bool end_stream) = 0;
  virtual void onResponseData(Buffer& data, bool end_stream) = 0;
  // The response ends with a trailer section (HTTP/2 trailers; instead of the last
  // onResponseData's end_stream). The default drops them and just ends the body.
  virtual void onResponseTrailers(HeaderMap trailers) {
    Buffer none;
    onResponseData(none, true);
  }
};

class RequestEncoder {
 public:
  virtual ~RequestEncoder() = default;
  // Framing as for responses: Content-Length if the headers carry one, chunked otherwise
  // unless `end_stream` (no body: neither). Adds Host from `authority` when absent.
  virtual void encodeHeaders(const RequestHeaders& headers, bool end_stream) = 0;
  virtual void encodeData(Buffer& data, bool end_stream) = 0;
};

// Why a client stream ended before its response did.
enum class ClientResetReason {
  NotSent,         // HTTP/2: its HEADERS never left (the connection closed or refused new streams)
  Refused,         // HTTP/2: RST_STREAM REFUSED_STREAM (RFC 9113 §8.7): nothing was processed
  GoAwayRefused,   // HTTP/2: above the GOAWAY's last-stream-id (§6.8): nothing was processed
  RemoteReset,     // HTTP/2: RST_STREAM with another error code
  ProtocolError,   // the response was malformed (HTTP/2: ferry reset the stream)
  ConnectionLost,  // the connection failed or closed with the stream open
};

// Per-stream events of a client connection that are not response bytes: the client-side twin
// of StreamCallbacks. Implemented by the pool's stream; given to ClientConnection::newStream.
// No call after the stream's user let go (Http1ClientCodec::detachStream,
// http2::ClientStream::detach) or after onStreamReset.
class ClientStreamCallbacks {
 public:
  virtual ~ClientStreamCallbacks() = default;
  // The stream ended before its response did. `code`: HTTP/2 the RST_STREAM / GOAWAY error
  // code when there was one; 0 otherwise.
  virtual void onStreamReset(ClientResetReason reason, uint32_t code) = 0;
  // The request's end was written into the connection's output (HTTP/1.1 from the encode call
  // that ended it; HTTP/2 when the frame carrying END_STREAM was made, which may wait for the
  // owner's flow-control credit).
  virtual void onRequestSent() = 0;
  // The request bytes this stream has waiting to be written rose above the high watermark /
  // fell back below the low one (HTTP/1.1: the connection's output; HTTP/2: the stream's own
  // buffer): pause / resume whatever feeds the request body.
  virtual void onAboveWriteBufferHighWatermark() = 0;
  virtual void onBelowWriteBufferLowWatermark() = 0;
};

// One upstream connection's protocol, ferry as the client: the client-side twin of
// ServerCodec. Implemented by http1::Http1ClientCodec (one stream at a time) and
// http2::Http2ClientCodec (multiplexed); owned by the pool's connection (upstream/
// http1_client.h, upstream/http2_client.h), which hands it the bytes it reads and flushes
// what it appends to the output.
class ClientConnection {
 public:
  virtual ~ClientConnection() = default;
  // Starts a request whose response goes to `decoder` and whose other events go to
  // `callbacks` (both outlive the stream, until its user lets go or it is reset). Returns
  // where the request is encoded; owned by the codec. HTTP/1.1: one at a time, after the
  // previous response's end.
  virtual RequestEncoder& newStream(ResponseDecoder& decoder, ClientStreamCallbacks& callbacks) = 0;
  // Parses response bytes and drains them. False on a connection error: the connection must
  // close (HTTP/2 once the GOAWAY it queued is flushed); errorDetail() says why.
  virtual bool dispatch(Buffer& data) = 0;
  // The connection closed: a close-delimited HTTP/1.1 response ends here; every other stream
  // whose response had not ended hears onStreamReset.
  virtual void onConnectionClosed() = 0;
  // The connection's output rose above its high watermark / fell below the low one.
  virtual void onAboveWriteBufferHighWatermark() = 0;
  virtual void onBelowWriteBufferLowWatermark() = 0;
  virtual const std::string& errorDetail() const = 0;
};

}  // namespace ferry::http
