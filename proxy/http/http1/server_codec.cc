#include "proxy/http/http1/server_codec.h"

#include <memory>

#include "proxy/http/http1/field_syntax.h"
#include "proxy/http/http1/hop_by_hop.h"
#include "proxy/http/http1/request_target.h"

namespace ferry::http::http1 {

namespace {

// RFC 9112 §6.1: the only transfer coding this proxy decodes is chunked. Any other coding in
// the list (llhttp already rejects lists whose final coding is not chunked) is one the next
// hop would never learn of once Transfer-Encoding is stripped, so it is refused.
bool onlyChunked(const HeaderMap& fields) {
  int codings = 0;
  for (const auto& field : fields.fields()) {
    if (!equalsIgnoreCase(field.name, "transfer-encoding")) continue;
    std::string_view rest = field.value;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view coding = trimOws(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (coding.empty()) continue;
      if (!equalsIgnoreCase(coding, "chunked")) return false;
      ++codings;
    }
  }
  return codings == 1;
}

}  // namespace

Http1ServerCodec::Http1ServerCodec(Buffer& output, ServerConnectionCallbacks& callbacks,
                                   const CodecSettings& settings)
    : callbacks_(callbacks),
      parser_(HTTP_REQUEST, settings.max_request_header_bytes, settings.max_request_headers),
      encoder_(output, *this) {}

bool Http1ServerCodec::fail(int status, std::string detail, CodecErrorKind kind) {
  failed_ = true;
  error_ = CodecError{status, std::move(detail), kind};
  // The connection closes after the answer (e.g. a 400 for a chunk framing error, given by the
  // stream whose body broke): its head says so (RFC 9112 §9.6).
  close_after_response_ = true;
  if (stream_active_ && !encoder_.headersEncoded()) encoder_.disableKeepAlive();
  return false;
}

bool Http1ServerCodec::requestHeadInProgress() const {
  return !failed_ && !stopped_ && !awaiting_response_ && parser_.headStarted() &&
         !parser_.headDone();
}

bool Http1ServerCodec::wantsClose() const {
  return close_after_response_ || stopped_ || encoder_.closesConnection();
}

void Http1ServerCodec::shutdownNotice() {
  close_after_response_ = true;
  // A response whose head is not written yet says so; a later request's will too.
  if (stream_active_ && !encoder_.headersEncoded()) encoder_.disableKeepAlive();
}

bool Http1ServerCodec::dispatch(Buffer& data) {
  if (failed_) return false;
  while (true) {
    if (stopped_) {
      // The connection closes after the current response: later bytes are never requests.
      data.clear();
      return true;
    }
    if (awaiting_response_) return true;

    Parser::Result result = parser_.execute(data);
    if (result.error) {
      return fail(parser_.errorStatus(), parser_.errorDetail(), parser_.errorKind());
    }
    // A request without a body completes together with its head.
    if (result.head_complete && !onRequestHead(result.message_complete)) return false;
    if (result.message_complete) request_complete_ = true;
    if (!parser_.body().empty() || result.message_complete) deliverBody(result.message_complete);
    if (result.message_complete) {
      if (response_complete_) {
        // Answered while we decoded (e.g. a local reply); the next request may start.
        stream_active_ = false;
      } else {
        awaiting_response_ = true;
      }
    }
    if (!result.head_complete && !result.message_complete && data.empty()) return true;
  }
}

bool Http1ServerCodec::onRequestHead(bool end_stream) {
  if (parser_.httpMajor() != 1) return fail(505, "unsupported HTTP version");
  const bool http10 = parser_.httpMinor() == 0;
  const llhttp_method_t method = parser_.method();
  if (method == HTTP_CONNECT) return fail(501, "CONNECT is not supported");

  // Not make_unique: that would zero-fill the map's inline storage first (see HeaderMap()).
  auto headers = std::make_unique_for_overwrite<RequestHeaders>();
  parser_.takeFields(headers->headers);
  HeaderMap& fields = headers->headers;
  // RFC 9112 §3.2: exactly one Host in an HTTP/1.1 request.
  const size_t hosts = fields.count("host");
  if (hosts > 1) return fail(400, "multiple Host fields");
  if (hosts == 0 && !http10) return fail(400, "missing Host field");
  std::string_view host = fields.get("host").value_or(std::string_view());
  if (!isValidHost(host)) return fail(400, "invalid Host field", CodecErrorKind::InvalidHost);
  RequestTarget target = parseRequestTarget(parser_.target());
  if (target.form == RequestTarget::Form::Invalid) {
    return fail(400, "invalid request target", CodecErrorKind::InvalidTarget);
  }
  if (parser_.hasTransferEncoding()) {
    // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 request is faulty framing.
    if (http10) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (!onlyChunked(fields)) return fail(501, "unsupported transfer coding");
  }

  headers->method = llhttp_method_name(method);
  if (http10) headers->protocol = "HTTP/1.0";
  if (target.form == RequestTarget::Form::Absolute) {
    // RFC 9112 §3.2.2: the target's authority is the Host, whatever the Host field said;
    // the upstream gets origin-form (§3.2.1), as a request to an origin server must be.
    headers->path = std::move(target.origin_form);
    headers->authority = std::string(target.authority);
    fields.set("Host", headers->authority);
  } else {
    headers->path = parser_.target();
    headers->authority = std::string(host);
  }
  // Connection, Transfer-Encoding, Upgrade, ... and whatever Connection names (RFC 9110
  // §7.6.1). Content-Length stays: it tells the next hop how this body is framed.
  removeHopByHopFields(headers->headers);
  // The parser checked every name and value: the encoder towards the upstream need not.
  headers->headers.markWireSafe();

  if (!parser_.shouldKeepAlive()) close_after_response_ = true;
  stream_active_ = true;
  request_complete_ = end_stream;
  request_end_delivered_ = end_stream;
  response_complete_ = false;
  encoder_.startRequest(RequestInfo{method == HTTP_HEAD, http10, !close_after_response_});
  decoder_ = &callbacks_.onNewRequest(encoder_);
  decoder_->onRequestHeaders(std::move(headers), end_stream);
  return true;
}

void Http1ServerCodec::deliverBody(bool end_stream) {
  Buffer& body = parser_.body();
  // Nobody listens once the response is complete (the connection is closing) or after the
  // last piece went out.
  if (decoder_ == nullptr || request_end_delivered_) {
    body.clear();
    return;
  }
  if (end_stream) request_end_delivered_ = true;
  decoder_->onRequestData(body, end_stream);
  body.clear();
}

void Http1ServerCodec::onResponseComplete() {
  response_complete_ = true;
  stream_active_ = false;
  decoder_ = nullptr;
  // If dispatch() already saw the end of the request, the codec is ready for the next one.
  awaiting_response_ = false;
  // A request body that will never be read leaves the connection unusable for another
  // request (RFC 9112 §9.6), as does a response that said it closes.
  if (!request_complete_ || wantsClose()) stopped_ = true;
}

void Http1ServerCodec::onResponseReset() {
  // The response was cut: the connection closes once the manager flushed what was written.
  onResponseComplete();
  stopped_ = true;
  close_after_response_ = true;
}

}  // namespace ferry::http::http1
