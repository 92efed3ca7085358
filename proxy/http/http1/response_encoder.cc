#include "proxy/http/http1/response_encoder.h"

#include <string>

#include "proxy/http/http1/field_syntax.h"
#include "proxy/http/http1/head_encoding.h"

namespace ferry::http::http1 {

namespace {

bool informational(int status) { return status >= 100 && status < 200; }

// RFC 9110 §6.4.1: 1xx, 204 and 304 responses never have content.
bool statusForbidsBody(int status) {
  return informational(status) || status == 204 || status == 304;
}

void appendStatusLine(std::string& head, const ResponseHeaders& headers) {
  std::string_view reason = headers.reason;
  if (reason.empty() || !isSafeFieldValue(reason)) reason = reasonPhrase(headers.status);
  head.append("HTTP/1.1 ");
  head.append(std::to_string(headers.status));
  // The space stays even when there is no reason phrase (RFC 9112 §4).
  head.push_back(' ');
  head.append(reason);
  head.append("\r\n");
}

}  // namespace

void ResponseEncoderImpl::startRequest(const RequestInfo& info) {
  request_ = info;
  stream_callbacks_ = nullptr;
  headers_encoded_ = false;
  complete_ = false;
  closes_connection_ = false;
  body_.start(BodyFraming::None);
}

void ResponseEncoderImpl::encodeInformational(const ResponseHeaders& headers) {
  // RFC 9110 §15.2: no 1xx to an HTTP/1.0 client; none after the final head; 101 would switch
  // protocols, which this codec does not do.
  if (request_.http10 || headers_encoded_ || complete_) return;
  if (!informational(headers.status) || headers.status == 101) return;
  appendStatusLine(head_, headers);
  appendEndToEndFields(head_, headers.headers, {"content-length"});
  head_.append("\r\n");
  flushHead(head_, output_);
}

BodyFraming ResponseEncoderImpl::chooseFraming(int status, bool has_content_length,
                                               bool end_stream) const {
  if (request_.head || statusForbidsBody(status)) return BodyFraming::None;
  if (has_content_length) return BodyFraming::ContentLength;
  if (end_stream) return BodyFraming::None;
  // RFC 9112 §6.1: chunked only to HTTP/1.1 clients; an HTTP/1.0 body ends at close.
  return request_.http10 ? BodyFraming::CloseDelimited : BodyFraming::Chunked;
}

void ResponseEncoderImpl::encodeHeaders(const ResponseHeaders& headers, bool end_stream) {
  if (headers_encoded_ || complete_) return;
  headers_encoded_ = true;
  const int status = headers.status;
  const bool has_content_length = contentLength(headers.headers).has_value();
  const BodyFraming framing = chooseFraming(status, has_content_length, end_stream);

  head_.reserve(headSizeHint(headers.headers) + headers.reason.size());
  appendStatusLine(head_, headers);
  // 1xx and 204 must not carry Content-Length (RFC 9110 §8.6); a 304 or a HEAD response may
  // (it describes the selected representation). One that is not a plain number would
  // mis-frame the body and is never written.
  const bool write_content_length = has_content_length && !informational(status) && status != 204;
  if (write_content_length) {
    appendEndToEndFields(head_, headers.headers);
  } else {
    appendEndToEndFields(head_, headers.headers, {"content-length"});
  }
  if (!has_content_length && end_stream && !request_.head && !statusForbidsBody(status)) {
    appendField(head_, "content-length", "0");
  }
  if (framing == BodyFraming::Chunked) appendField(head_, "transfer-encoding", "chunked");

  // A final answer that starts before the request's body has ended (an early error, a 408 for
  // a body that stalled) closes the connection: its rest may never come, and whatever of it
  // does is not a request (RFC 9112 §9.6). Said in the head, so the client does not reuse it.
  closes_connection_ = !request_.keep_alive || framing == BodyFraming::CloseDelimited ||
                       !callbacks_.requestComplete();
  if (closes_connection_) {
    appendField(head_, "connection", "close");
  } else if (request_.http10) {
    // An HTTP/1.0 client keeps the connection only when told so (RFC 9112 §9.3 / RFC 2068).
    appendField(head_, "connection", "keep-alive");
  }
  head_.append("\r\n");
  flushHead(head_, output_);

  body_.start(framing);
  if (end_stream) {
    Buffer empty;
    body_.write(output_, empty, true);
    complete();
  }
}

void ResponseEncoderImpl::encodeData(Buffer& data, bool end_stream) {
  if (!headers_encoded_ || complete_) {
    data.clear();
    return;
  }
  body_.write(output_, data, end_stream);
  if (end_stream) complete();
}

void ResponseEncoderImpl::encodeTrailers(const HeaderMap& trailers) {
  if (!headers_encoded_ || complete_) return;
  body_.writeTrailers(output_, trailers);
  complete();
}

void ResponseEncoderImpl::complete() {
  complete_ = true;
  stream_callbacks_ = nullptr;
  callbacks_.onResponseComplete();
}

void ResponseEncoderImpl::resetStream() {
  if (complete_) return;
  // HTTP/1.1 has no way to end one response early but the close: the client sees a short
  // body or a missing last chunk (RFC 9112 §8).
  complete_ = true;
  stream_callbacks_ = nullptr;
  callbacks_.onResponseReset();
}

}  // namespace ferry::http::http1
