#include "proxy/http/http1/client_codec.h"

#include <memory>

#include "proxy/http/http1/hop_by_hop.h"

namespace ferry::http::http1 {

Http1ClientCodec::Http1ClientCodec(Buffer& output)
    : parser_(HTTP_RESPONSE, kMaxResponseHeadBytes), encoder_(output) {}

RequestEncoder& Http1ClientCodec::newStream(ResponseDecoder& decoder,
                                            ClientStreamCallbacks& callbacks) {
  decoder_ = &decoder;
  callbacks_ = &callbacks;
  response_started_ = false;
  response_complete_ = false;
  response_end_delivered_ = false;
  encoder_.startRequest();
  return *this;
}

void Http1ClientCodec::encodeHeaders(const RequestHeaders& headers, bool end_stream) {
  encoder_.encodeHeaders(headers, end_stream);
  if (end_stream && callbacks_ != nullptr) callbacks_->onRequestSent();
}

void Http1ClientCodec::encodeData(Buffer& data, bool end_stream) {
  encoder_.encodeData(data, end_stream);
  if (end_stream && callbacks_ != nullptr) callbacks_->onRequestSent();
}

void Http1ClientCodec::raiseReset(ClientResetReason reason) {
  ClientStreamCallbacks* callbacks = callbacks_;
  callbacks_ = nullptr;
  if (callbacks != nullptr) callbacks->onStreamReset(reason, 0);
}

bool Http1ClientCodec::keepAlive() const {
  // A request still being sent when its response ended leaves the upstream mid-body.
  return keep_alive_ && !failed_ && (decoder_ == nullptr || encoder_.complete());
}

bool Http1ClientCodec::fail(std::string detail, CodecErrorKind kind) {
  failed_ = true;
  error_kind_ = kind;
  keep_alive_ = false;
  error_detail_ = std::move(detail);
  return false;
}

bool Http1ClientCodec::dispatch(Buffer& data) {
  if (failed_) return false;
  while (true) {
    if (decoder_ == nullptr || response_complete_) {
      // HTTP/1.1 has no unsolicited responses; bytes here would be mistaken for the next
      // request's response.
      return data.empty() ? true : fail("response bytes without a request");
    }
    // RFC 9110 §9.3.2: a response to HEAD has no body whatever its head says.
    parser_.setSkipBody(encoder_.headRequest());
    Parser::Result result = parser_.execute(data);
    if (result.error) return fail(parser_.errorDetail(), parser_.errorKind());
    if (result.head_complete) {
      if (!onResponseHead(result.message_complete)) return false;
      // A 1xx or a body-less final response completed with its head.
      continue;
    }
    if (!parser_.body().empty() || result.message_complete) deliverBody(result.message_complete);
    if (!result.message_complete && data.empty()) return true;
  }
}

bool Http1ClientCodec::onResponseHead(bool message_complete) {
  const int status = parser_.statusCode();
  // status-code = 3DIGIT (RFC 9110 §15), and only 1xx..5xx have a meaning: llhttp reads
  // "HTTP/1.1 20 OK" as 20. A client could not tell such a response from garbage.
  if (status < 100 || status > 599) {
    return fail("status code out of range", CodecErrorKind::InvalidStatus);
  }
  // Not make_unique: that would zero-fill the map's inline storage first (see HeaderMap()).
  auto headers = std::make_unique_for_overwrite<ResponseHeaders>();
  headers->status = status;
  headers->reason = parser_.reason();
  parser_.takeFields(headers->headers);
  removeHopByHopFields(headers->headers);
  // The parser checked every name and value: the encoder towards the client need not.
  headers->headers.markWireSafe();

  if (status >= 100 && status < 200) {
    // 101 would switch protocols; this codec only speaks HTTP/1.1.
    if (status == 101) return fail("unexpected 101 Switching Protocols");
    // 1xx heads carry no framing; the final response follows on the same stream.
    headers->headers.remove("content-length");
    decoder_->onInformational(std::move(headers));
    return true;
  }

  response_started_ = true;
  // Decided from the head, so the decoder can ask keepAlive() from its end_stream callback.
  // RFC 9112 §9.3: HTTP/1.1 persists unless "close"; HTTP/1.0 only with "keep-alive"; and a
  // close-delimited body (no Content-Length, not chunked, not body-less) ends the connection.
  const uint16_t flags = parser_.raw().flags;
  const bool http11 = parser_.httpMajor() == 1 && parser_.httpMinor() >= 1;
  const bool persistent =
      http11 ? (flags & F_CONNECTION_CLOSE) == 0 : (flags & F_CONNECTION_KEEP_ALIVE) != 0;
  const bool close_delimited =
      !message_complete && !parser_.chunked() && !parser_.hasContentLength();
  keep_alive_ = persistent && !close_delimited;
  if (parser_.chunked()) headers->headers.remove("content-length");

  if (message_complete) {
    response_complete_ = true;
    response_end_delivered_ = true;
  }
  decoder_->onResponseHeaders(std::move(headers), message_complete);
  return true;
}

void Http1ClientCodec::deliverBody(bool end_stream) {
  Buffer& body = parser_.body();
  if (decoder_ == nullptr || response_end_delivered_) {
    body.clear();
    return;
  }
  if (end_stream) {
    // State first: the decoder may start the next request from this very callback.
    response_complete_ = true;
    response_end_delivered_ = true;
  }
  decoder_->onResponseData(body, end_stream);
  body.clear();
}

void Http1ClientCodec::onConnectionClosed() {
  const bool idle = decoder_ == nullptr || response_complete_;
  keep_alive_ = false;
  // A malformed response (or bytes after its end) already failed the connection.
  if (failed_) {
    raiseReset(ClientResetReason::ProtocolError);
    return;
  }
  // Nothing was expected, so nothing was lost.
  if (idle) return;
  // A body without Content-Length or chunked framing ends where the connection does
  // (RFC 9112 §6.3 rule 8); anything else cut short is an error.
  if (!response_started_ || !parser_.finish()) {
    fail("upstream closed before the response was complete");
    raiseReset(ClientResetReason::ConnectionLost);
    return;
  }
  deliverBody(true);
}

void Http1ClientCodec::onConnectionLost() {
  keep_alive_ = false;
  raiseReset(ClientResetReason::ConnectionLost);
}

}  // namespace ferry::http::http1
