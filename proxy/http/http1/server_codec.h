#pragma once
// The downstream HTTP/1.1 codec (RFC 9112): parses requests from what the connection read and
// writes responses into the connection's output. Created by createServerCodec() and owned by
// the connection. One request is decoded at a time: after a request is complete the codec
// consumes nothing until its response is complete, so pipelined requests are answered in
// order (RFC 9112 §9.3.2).

#include <string>

#include "proxy/buffer/buffer.h"
#include "proxy/http/codec.h"
#include "proxy/http/http1/codec_factory.h"
#include "proxy/http/http1/parser.h"
#include "proxy/http/http1/response_encoder.h"

namespace ferry::http::http1 {

class Http1ServerCodec : public ServerCodec, private ResponseEncoderCallbacks {
 public:
  Http1ServerCodec(Buffer& output, ServerConnectionCallbacks& callbacks,
                   const CodecSettings& settings);

  // ServerCodec
  bool dispatch(Buffer& data) override;
  const CodecError& error() const override { return error_; }
  bool requestHeadInProgress() const override;
  bool wantsClose() const override;
  void shutdownNotice() override;
  void goAway() override { shutdownNotice(); }
  void onAboveWriteBufferHighWatermark() override { encoder_.onAboveWriteBufferHighWatermark(); }
  void onBelowWriteBufferLowWatermark() override { encoder_.onBelowWriteBufferLowWatermark(); }
  std::string_view protocol() const override { return "HTTP/1.1"; }

  // True while a request was decoded and its response is not yet complete.
  bool streamActive() const { return stream_active_; }

 private:
  // ResponseEncoderCallbacks
  bool requestComplete() const override { return request_complete_; }
  void onResponseComplete() override;
  void onResponseReset() override;
  void readDisable(bool disable) override { callbacks_.readDisableConnection(disable); }

  bool fail(int status, std::string detail, CodecErrorKind kind = CodecErrorKind::Malformed);
  // Validates the head just parsed and hands it to a new stream. False on a bad request.
  bool onRequestHead(bool end_stream);
  // Hands the body bytes the parser collected to the stream.
  void deliverBody(bool end_stream);

  ServerConnectionCallbacks& callbacks_;
  Parser parser_;
  ResponseEncoderImpl encoder_;
  RequestDecoder* decoder_ = nullptr;  // the current stream; null once its response completed
  CodecError error_;
  bool failed_ = false;
  bool stream_active_ = false;
  bool request_complete_ = false;
  bool request_end_delivered_ = false;
  bool response_complete_ = false;
  // The request is complete and its response is not: later bytes wait in the caller's buffer.
  bool awaiting_response_ = false;
  // Sticky: some request did not allow keep-alive, or a response was close-delimited.
  bool close_after_response_ = false;
  // The connection closes after the current response; nothing more is decoded.
  bool stopped_ = false;
};

}  // namespace ferry::http::http1
