#pragma once
// The upstream HTTP/1.1 codec (RFC 9112): writes requests into the upstream connection's
// output and parses the responses it reads. Created by createClientCodec() and owned by the
// HTTP/1 pool's connection (upstream/http1_client.h). One request at a time (no pipelining);
// after a complete response with keepAlive() the connection may call newStream() again.
// Stream events go to the ClientStreamCallbacks given to newStream until detachStream() or a
// reset: the connection's watermarks, the request's end, and a response lost with the
// connection (onConnectionClosed, onConnectionLost).

#include <cstdint>
#include <string>

#include "proxy/buffer/buffer.h"
#include "proxy/http/codec.h"
#include "proxy/http/http1/parser.h"
#include "proxy/http/http1/request_encoder.h"

namespace ferry::http::http1 {

// Response heads bigger than this are refused (the upstream is misbehaving).
inline constexpr uint64_t kMaxResponseHeadBytes = 80 * 1024;

// final: its connection holds it by its own type, so the calls per read and per chunk stay
// direct (not virtual).
class Http1ClientCodec final : public ClientConnection, private RequestEncoder {
 public:
  explicit Http1ClientCodec(Buffer& output);

  // ClientConnection
  RequestEncoder& newStream(ResponseDecoder& decoder, ClientStreamCallbacks& callbacks) override;
  // False on a malformed response; the stream hears onStreamReset(ProtocolError) when the
  // connection closes (onConnectionClosed).
  bool dispatch(Buffer& data) override;
  void onConnectionClosed() override;
  void onAboveWriteBufferHighWatermark() override {
    if (callbacks_ != nullptr) callbacks_->onAboveWriteBufferHighWatermark();
  }
  void onBelowWriteBufferLowWatermark() override {
    if (callbacks_ != nullptr) callbacks_->onBelowWriteBufferLowWatermark();
  }
  // Why dispatch() or onConnectionClosed() failed (for logs and counters).
  const std::string& errorDetail() const override { return error_detail_; }

  // The connection ended in a way that ends no response (TLS without close_notify, RFC 8446
  // §6.1; a handshake the upstream refused late): an attached stream hears
  // onStreamReset(ConnectionLost), a close-delimited body included.
  void onConnectionLost();
  // The stream's user let go: no callback reaches it afterwards (the decoder neither: the
  // connection reads no response without a stream).
  void detachStream() { callbacks_ = nullptr; }
  // True when the last response allows reusing the connection.
  bool keepAlive() const;
  // Bytes of the current request written into the output so far (0 = nothing sent yet).
  uint64_t requestBytesEncoded() const { return encoder_.bytesEncoded(); }
  // True once the current response's head has been decoded.
  bool responseStarted() const { return response_started_; }
  // After dispatch() returned false: what was wrong with the response.
  CodecErrorKind errorKind() const { return error_kind_; }

 private:
  // RequestEncoder (the stream newStream hands out): writes through encoder_, then tells the
  // stream's callbacks when the request's end went out.
  void encodeHeaders(const RequestHeaders& headers, bool end_stream) override;
  void encodeData(Buffer& data, bool end_stream) override;

  bool fail(std::string detail, CodecErrorKind kind = CodecErrorKind::Malformed);
  // Hands a decoded head to the decoder. `message_complete` = it has no body.
  bool onResponseHead(bool message_complete);
  void deliverBody(bool end_stream);
  // Tells the attached stream it ended early (once: it is detached first).
  void raiseReset(ClientResetReason reason);

  Parser parser_;
  RequestEncoderImpl encoder_;
  ResponseDecoder* decoder_ = nullptr;          // the current stream; null when idle
  ClientStreamCallbacks* callbacks_ = nullptr;  // its callbacks; null once it let go
  std::string error_detail_;
  CodecErrorKind error_kind_ = CodecErrorKind::Malformed;
  bool failed_ = false;
  bool response_started_ = false;
  bool response_complete_ = false;
  bool response_end_delivered_ = false;
  bool keep_alive_ = true;
};

}  // namespace ferry::http::http1
