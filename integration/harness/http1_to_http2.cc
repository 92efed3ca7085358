#include "integration/harness/http1_to_http2.h"

namespace ferry::testing {
namespace {

Http1ToHttp2& self(llhttp_t* p) { return *static_cast<Http1ToHttp2*>(p->data); }

}  // namespace

Http1ToHttp2::Http1ToHttp2(Http2Client& client) : client_(client) {
  llhttp_settings_init(&settings_);
  settings_.on_method = &Http1ToHttp2::onMethod;
  settings_.on_url = &Http1ToHttp2::onUrl;
  settings_.on_header_field = &Http1ToHttp2::onHeaderField;
  settings_.on_header_value = &Http1ToHttp2::onHeaderValue;
  settings_.on_headers_complete = &Http1ToHttp2::onHeadersComplete;
  settings_.on_body = &Http1ToHttp2::onBody;
  settings_.on_message_complete = &Http1ToHttp2::onMessageComplete;
  reset();
}

void Http1ToHttp2::reset() {
  llhttp_init(&parser_, HTTP_REQUEST, &settings_);
  parser_.data = this;
  streams_.clear();
  method_.clear();
  url_.clear();
  headers_.clear();
  in_field_ = body_open_ = false;
  error_ = Status::ok();
}

Status Http1ToHttp2::feed(std::string_view bytes) {
  const llhttp_errno_t err = llhttp_execute(&parser_, bytes.data(), bytes.size());
  if (!error_.isOk()) return error_;
  if (err != HPE_OK) {
    return invalidArgument(std::string("not an HTTP/1.1 request: ") +
                           llhttp_get_error_reason(&parser_));
  }
  return Status::ok();
}

int Http1ToHttp2::onMethod(llhttp_t* p, const char* at, size_t len) {
  Http1ToHttp2& t = self(p);
  if (t.headers_.empty() && !t.in_field_ && t.url_.empty()) t.method_.append(at, len);
  return 0;
}

int Http1ToHttp2::onUrl(llhttp_t* p, const char* at, size_t len) {
  self(p).url_.append(at, len);
  return 0;
}

int Http1ToHttp2::onHeaderField(llhttp_t* p, const char* at, size_t len) {
  Http1ToHttp2& t = self(p);
  if (!t.in_field_) t.headers_.emplace_back();
  t.in_field_ = true;
  t.headers_.back().first.append(at, len);
  return 0;
}

int Http1ToHttp2::onHeaderValue(llhttp_t* p, const char* at, size_t len) {
  Http1ToHttp2& t = self(p);
  t.in_field_ = false;
  if (!t.headers_.empty()) t.headers_.back().second.append(at, len);
  return 0;
}

int Http1ToHttp2::onHeadersComplete(llhttp_t* p) {
  Http1ToHttp2& t = self(p);
  // A body follows when the head framed one (RFC 9112 section 6.3): chunked, or a
  // Content-Length above 0. Its bytes go out as DATA as they are fed.
  const bool chunked = (p->flags & F_CHUNKED) != 0;
  const bool has_length = (p->flags & F_CONTENT_LENGTH) != 0;
  t.body_open_ = chunked || (has_length && p->content_length > 0);
  auto id = t.client_.submitRequest(t.method_, t.url_, t.headers_, {}, !t.body_open_);
  if (!id.isOk()) {
    t.error_ = id.status();
    return -1;
  }
  t.streams_.push_back(*id);
  return 0;
}

int Http1ToHttp2::onBody(llhttp_t* p, const char* at, size_t len) {
  Http1ToHttp2& t = self(p);
  Status s = t.client_.sendData(t.streams_.back(), std::string_view(at, len), false);
  if (!s.isOk()) {
    t.error_ = s;
    return -1;
  }
  return 0;
}

int Http1ToHttp2::onMessageComplete(llhttp_t* p) {
  Http1ToHttp2& t = self(p);
  if (t.body_open_) {
    Status s = t.client_.sendData(t.streams_.back(), {}, true);
    if (!s.isOk()) {
      t.error_ = s;
      return -1;
    }
  }
  t.method_.clear();
  t.url_.clear();
  t.headers_.clear();
  t.in_field_ = t.body_open_ = false;
  return 0;
}

}  // namespace ferry::testing
