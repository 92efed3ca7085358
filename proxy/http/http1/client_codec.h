#pragma once
// The upstream HTTP/1.1 codec (RFC 9112): writes requests into the upstream connection's
// output and parses the responses it reads. Created by createClientCodec() and owned by the
// HTTP/1 connection pool's connection. One request at a time (no pipelining); after a
// complete response with keepAlive() the pool may call newStream() again.

#include <cstdint>
#include <string>

#include "proxy/buffer/buffer.h"
#include "proxy/http/codec.h"
#include "proxy/http/http1/parser.h"
#include "proxy/http/http1/request_encoder.h"

namespace ferry::http::http1 {

// Response heads bigger than this are refused (the upstream is misbehaving).
inline constexpr uint64_t kMaxResponseHeadBytes = 80 * 1024;

class ClientCodecImpl : public ClientCodec {
 public:
  explicit ClientCodecImpl(Buffer& output);

  // ClientCodec
  RequestEncoder& newStream(ResponseDecoder& decoder) override;
  bool dispatch(Buffer& data) override;
  bool onConnectionClosed() override;
  bool keepAlive() const override;
  uint64_t requestBytesEncoded() const override { return encoder_.bytesEncoded(); }
  bool responseStarted() const override { return response_started_; }
  CodecErrorKind errorKind() const override { return error_kind_; }

  // Why dispatch() or onConnectionClosed() failed (for logs and counters).
  const std::string& errorDetail() const { return error_detail_; }

 private:
  bool fail(std::string detail, CodecErrorKind kind = CodecErrorKind::Malformed);
  // Hands a decoded head to the decoder. `message_complete` = it has no body.
  bool onResponseHead(bool message_complete);
  void deliverBody(bool end_stream);

  Parser parser_;
  RequestEncoderImpl encoder_;
  ResponseDecoder* decoder_ = nullptr;  // the current stream; null when idle
  std::string error_detail_;
  CodecErrorKind error_kind_ = CodecErrorKind::Malformed;
  bool failed_ = false;
  bool response_started_ = false;
  bool response_complete_ = false;
  bool response_end_delivered_ = false;
  bool keep_alive_ = true;
};

}  // namespace ferry::http::http1
