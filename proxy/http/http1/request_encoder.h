#pragma once
// Writes one HTTP/1.1 request into the upstream connection's output (RFC 9112 §3, §6). Owned
// by the Http1ClientCodec and reused for each request; startRequest() resets it.

#include <cstdint>
#include <string>

#include "proxy/buffer/buffer.h"
#include "proxy/http/codec.h"
#include "proxy/http/http1/body_writer.h"

namespace ferry::http::http1 {

class RequestEncoderImpl : public RequestEncoder {
 public:
  explicit RequestEncoderImpl(Buffer& output) : output_(output) {}

  void startRequest();

  // RequestEncoder
  void encodeHeaders(const RequestHeaders& headers, bool end_stream) override;
  void encodeData(Buffer& data, bool end_stream) override;

  // True when the request being written is HEAD (its response has no body).
  bool headRequest() const { return head_request_; }
  bool headersEncoded() const { return headers_encoded_; }
  // True once the request's last byte was written.
  bool complete() const { return complete_; }
  uint64_t bytesEncoded() const { return bytes_encoded_; }

 private:
  Buffer& output_;
  std::string head_;  // reused for every head (flushHead())
  BodyWriter body_;
  bool head_request_ = false;
  bool headers_encoded_ = false;
  bool complete_ = false;
  uint64_t bytes_encoded_ = 0;
};

}  // namespace ferry::http::http1
