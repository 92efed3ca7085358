#include "proxy/http/http1/request_encoder.h"

#include <string>

#include "proxy/http/http1/head_encoding.h"

namespace ferry::http::http1 {

void RequestEncoderImpl::startRequest() {
  head_request_ = false;
  headers_encoded_ = false;
  complete_ = false;
  bytes_encoded_ = 0;
  body_.start(BodyFraming::None);
}

void RequestEncoderImpl::encodeHeaders(const RequestHeaders& headers, bool end_stream) {
  if (headers_encoded_) return;
  headers_encoded_ = true;
  head_request_ = headers.method == "HEAD";

  head_.reserve(headSizeHint(headers.headers) + headers.method.size() + headers.path.size() +
                headers.authority.size());
  head_.append(headers.method);
  head_.push_back(' ');
  head_.append(headers.path.empty() ? "/" : headers.path);
  head_.append(" HTTP/1.1\r\n");
  // RFC 9112 §3.2: every HTTP/1.1 request carries Host; send it first.
  auto host = headers.headers.get("host");
  std::string_view authority = host ? *host : std::string_view(headers.authority);
  if (!authority.empty()) appendField(head_, "host", authority);

  const bool has_content_length = contentLength(headers.headers).has_value();
  if (has_content_length) {
    appendEndToEndFields(head_, headers.headers, {"host"});
  } else {
    appendEndToEndFields(head_, headers.headers, {"host", "content-length"});
  }
  BodyFraming framing = BodyFraming::None;
  if (has_content_length) {
    framing = BodyFraming::ContentLength;
  } else if (!end_stream) {
    // The body's size is unknown here; chunked is always available towards an HTTP/1.1
    // upstream (RFC 9112 §7).
    framing = BodyFraming::Chunked;
    appendField(head_, "transfer-encoding", "chunked");
  }
  head_.append("\r\n");
  bytes_encoded_ += head_.size();
  flushHead(head_, output_);

  body_.start(framing);
  if (end_stream) {
    Buffer empty;
    bytes_encoded_ += body_.write(output_, empty, true);
    complete_ = true;
  }
}

void RequestEncoderImpl::encodeData(Buffer& data, bool end_stream) {
  if (!headers_encoded_ || complete_) {
    data.clear();
    return;
  }
  bytes_encoded_ += body_.write(output_, data, end_stream);
  if (end_stream) complete_ = true;
}

}  // namespace ferry::http::http1
