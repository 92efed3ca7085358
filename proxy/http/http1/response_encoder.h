#pragma once
// Writes one HTTP/1.1 response into the connection's output (RFC 9112 §4, §6). Owned by the
// Http1ServerCodec and reused for each request; the codec calls startRequest() before handing
// it to ServerConnectionCallbacks::onNewRequest, and hears back through ResponseEncoderCallbacks
// when the response is complete.

#include <cstdint>
#include <string>

#include "proxy/buffer/buffer.h"
#include "proxy/http/codec.h"
#include "proxy/http/http1/body_writer.h"

namespace ferry::http::http1 {

// Implemented by the server codec.
class ResponseEncoderCallbacks {
 public:
  virtual ~ResponseEncoderCallbacks() = default;
  // True when the whole request (body included) has been decoded.
  virtual bool requestComplete() const = 0;
  // The response's last byte was written (encodeHeaders or encodeData with end_stream).
  virtual void onResponseComplete() = 0;
  // The stream gave up on its response (resetStream): the connection must close.
  virtual void onResponseReset() = 0;
  // The stream asked to stop / resume taking its request body (calls nest).
  virtual void readDisable(bool disable) = 0;
};

// What the encoder must know about the request it answers.
struct RequestInfo {
  bool head = false;       // HEAD: the response never carries body bytes (RFC 9110 §9.3.2)
  bool http10 = false;     // HTTP/1.0 client: no chunked, no 1xx (RFC 9110 §15.2)
  bool keep_alive = true;  // the request allows another request on the connection
};

class ResponseEncoderImpl : public ResponseEncoder {
 public:
  ResponseEncoderImpl(Buffer& output, ResponseEncoderCallbacks& callbacks)
      : output_(output), callbacks_(callbacks) {}

  void startRequest(const RequestInfo& info);

  // ResponseEncoder
  void setStreamCallbacks(StreamCallbacks& callbacks) override { stream_callbacks_ = &callbacks; }
  void encodeInformational(const ResponseHeaders& headers) override;
  void encodeHeaders(const ResponseHeaders& headers, bool end_stream) override;
  void encodeData(Buffer& data, bool end_stream) override;
  // Chunked: the trailer section after the last chunk; otherwise the body just ends.
  void encodeTrailers(const HeaderMap& trailers) override;

  // True once the final head was written.
  bool headersEncoded() const { return headers_encoded_; }
  bool complete() const { return complete_; }
  // True when the head announced that the connection closes after this response.
  bool closesConnection() const { return closes_connection_; }
  // Drain: a head not yet written announces `Connection: close`.
  void disableKeepAlive() { request_.keep_alive = false; }
  bool canEndEarly() const override {
    return headers_encoded_ && !complete_ &&
           (body_.framing() == BodyFraming::Chunked ||
            body_.framing() == BodyFraming::CloseDelimited);
  }
  void resetStream() override;
  void readDisable(bool disable) override { callbacks_.readDisable(disable); }

  // The connection's output crossed a watermark: on HTTP/1.1 that is this stream's.
  void onAboveWriteBufferHighWatermark() {
    if (stream_callbacks_ != nullptr) stream_callbacks_->onAboveWriteBufferHighWatermark();
  }
  void onBelowWriteBufferLowWatermark() {
    if (stream_callbacks_ != nullptr) stream_callbacks_->onBelowWriteBufferLowWatermark();
  }

 private:
  BodyFraming chooseFraming(int status, bool has_content_length, bool end_stream) const;
  void complete();

  Buffer& output_;
  std::string head_;  // reused for every head (flushHead())
  ResponseEncoderCallbacks& callbacks_;
  StreamCallbacks* stream_callbacks_ = nullptr;  // the current stream's; null between streams
  RequestInfo request_;
  BodyWriter body_;
  bool headers_encoded_ = false;
  bool complete_ = false;
  bool closes_connection_ = false;
};

}  // namespace ferry::http::http1
