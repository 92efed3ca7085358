#include "proxy/http/http1/parser.h"

#include "proxy/http/http1/field_syntax.h"

namespace ferry::http::http1 {

void SpanAccumulator::append(std::string_view piece) {
  if (pending_.empty() && copied_.empty()) {
    pending_ = piece;
    return;
  }
  spill();
  copied_.append(piece);
}

void SpanAccumulator::spill() {
  copied_.append(pending_);
  pending_ = {};
}

void SpanAccumulator::clear() {
  pending_ = {};
  copied_.clear();
}

Parser::Parser(llhttp_type_t type, uint64_t max_head_bytes)
    : scanner_(type == HTTP_REQUEST ? HeadScanner::Mode::Request : HeadScanner::Mode::Response,
               max_head_bytes) {
  llhttp_settings_init(&settings_);
  settings_.on_message_begin = onMessageBegin;
  settings_.on_url = onUrl;
  settings_.on_status = onStatus;
  settings_.on_header_field = onHeaderField;
  settings_.on_header_field_complete = onHeaderFieldComplete;
  settings_.on_header_value = onHeaderValue;
  settings_.on_header_value_complete = onHeaderValueComplete;
  settings_.on_headers_complete = onHeadersComplete;
  settings_.on_body = onBody;
  settings_.on_message_complete = onMessageComplete;
  llhttp_init(&parser_, type, &settings_);
  parser_.data = this;
}

Parser::Result Parser::fail(Result result, int status, std::string detail) {
  if (error_status_ == 0) {
    error_status_ = status;
    error_detail_ = std::move(detail);
  }
  result.error = true;
  return result;
}

Parser::Result Parser::execute(std::string_view bytes) {
  Result result;
  if (error_status_ != 0) return fail(result, error_status_, error_detail_);
  std::string_view feed = bytes;
  if (!head_done_) {
    HeadScanner::Result scanned = scanner_.scan(bytes);
    if (scanned.state == HeadScanner::State::Error) {
      return fail(result, scanner_.errorStatus(), std::string(scanner_.errorDetail()));
    }
    // Never let llhttp see bytes past the end of the head the scanner approved.
    feed = bytes.substr(0, scanned.consumed);
  }

  llhttp_errno_t err = llhttp_execute(&parser_, feed.data(), feed.size());
  size_t consumed = feed.size();
  // An Upgrade request is parsed as a plain request (its Upgrade field is dropped): llhttp
  // reports HPE_PAUSED_UPGRADE after it, and parsing simply continues.
  while (err == HPE_PAUSED_UPGRADE) {
    size_t used = static_cast<size_t>(llhttp_get_error_pos(&parser_) - feed.data());
    llhttp_resume_after_upgrade(&parser_);
    err = llhttp_execute(&parser_, feed.data() + used, feed.size() - used);
  }
  // A name or value cut by the end of `bytes` continues in the next call, when these bytes
  // may be gone.
  name_.spill();
  value_.spill();
  if (err == HPE_PAUSED) {
    consumed = static_cast<size_t>(llhttp_get_error_pos(&parser_) - feed.data());
    llhttp_resume(&parser_);
  } else if (err != HPE_OK) {
    if (error_status_ != 0) return fail(result, error_status_, error_detail_);
    std::string detail = llhttp_errno_name(err);
    if (const char* reason = llhttp_get_error_reason(&parser_); reason != nullptr) {
      detail += ": ";
      detail += reason;
    }
    return fail(result, 400, std::move(detail));
  }

  result.consumed = consumed;
  result.head_complete = head_complete_event_;
  result.message_complete = message_complete_event_;
  head_complete_event_ = false;
  message_complete_event_ = false;
  if (!head_done_ && scanner_.done() && !result.message_complete) {
    // The scanner saw the end of the head but llhttp did not: they disagree on framing.
    return fail(result, 400, "head framing mismatch");
  }
  return result;
}

Parser::Result Parser::execute(Buffer& data) {
  // One evbuffer chain at a time: no copy of the input; the codec loops over the rest.
  evbuffer_iovec slice{};
  std::string_view bytes;
  if (evbuffer_peek(data.raw(), -1, nullptr, &slice, 1) > 0 && slice.iov_len > 0) {
    bytes = {static_cast<const char*>(slice.iov_base), slice.iov_len};
  } else if (!data.empty()) {
    bytes = data.linearize();
  }
  Result result = execute(bytes);
  data.drain(result.consumed);
  return result;
}

bool Parser::finish() {
  if (error_status_ != 0 || !needsEof()) return false;
  llhttp_errno_t err = llhttp_finish(&parser_);
  if (err == HPE_PAUSED) llhttp_resume(&parser_);
  bool completed = (err == HPE_OK || err == HPE_PAUSED) && message_complete_event_;
  message_complete_event_ = false;
  return completed;
}

int Parser::onMessageBegin(llhttp_t* p) {
  Parser& parser = self(p);
  parser.fields_ = HeaderMap();
  parser.name_.clear();
  parser.value_.clear();
  parser.target_.clear();
  parser.reason_.clear();
  return 0;
}

int Parser::onUrl(llhttp_t* p, const char* at, size_t length) {
  self(p).target_.append(at, length);
  return 0;
}

int Parser::onStatus(llhttp_t* p, const char* at, size_t length) {
  self(p).reason_.append(at, length);
  return 0;
}

// Names and values may arrive in several pieces when the bytes were split; they are
// accumulated and committed by the *_complete callbacks. Trailer fields (after the head) are
// parsed by llhttp and dropped here.
int Parser::onHeaderField(llhttp_t* p, const char* at, size_t length) {
  Parser& parser = self(p);
  if (!parser.head_done_) parser.name_.append({at, length});
  return 0;
}

int Parser::onHeaderFieldComplete(llhttp_t* p) {
  Parser& parser = self(p);
  if (parser.head_done_) return 0;
  // llhttp 8 (non-strict) accepts "X A", "X-A " and empty names; RFC 9110 §5.1 does not.
  if (!isToken(parser.name_.view())) {
    parser.error_status_ = 400;
    parser.error_detail_ = "invalid header name";
    return HPE_USER;
  }
  return 0;
}

int Parser::onHeaderValue(llhttp_t* p, const char* at, size_t length) {
  Parser& parser = self(p);
  if (!parser.head_done_) parser.value_.append({at, length});
  return 0;
}

int Parser::onHeaderValueComplete(llhttp_t* p) {
  Parser& parser = self(p);
  if (parser.head_done_) return 0;
  parser.fields_.add(parser.name_.view(), trimOws(parser.value_.view()));
  parser.name_.clear();
  parser.value_.clear();
  return 0;
}

int Parser::onHeadersComplete(llhttp_t* p) {
  Parser& parser = self(p);
  parser.head_done_ = true;
  parser.head_complete_event_ = true;
  const bool response = p->type == HTTP_RESPONSE;
  const int status = p->status_code;
  // RFC 9112 §6.3 rule 1: a response to HEAD and any 1xx, 204 or 304 response ends at its
  // head, whatever Content-Length it carries (llhttp 8 would wait for that many bytes).
  // 1 = "this message has no body" in llhttp's contract.
  if (parser.skip_body_ || (response && (status / 100 == 1 || status == 204 || status == 304))) {
    return 1;
  }
  // A message without a body completes in the same execute() as its head. One with a body
  // pauses here so the codec handles the head before any body byte is parsed.
  const bool chunked = (p->flags & F_CHUNKED) != 0;
  const bool has_length = (p->flags & F_CONTENT_LENGTH) != 0;
  const bool has_body = chunked || (has_length && p->content_length > 0) ||
                        (response && !has_length);  // response: close-delimited otherwise
  return has_body ? HPE_PAUSED : 0;
}

int Parser::onBody(llhttp_t* p, const char* at, size_t length) {
  self(p).body_.add(at, length);
  return 0;
}

int Parser::onMessageComplete(llhttp_t* p) {
  Parser& parser = self(p);
  parser.message_complete_event_ = true;
  parser.head_done_ = false;
  parser.scanner_.reset();
  return HPE_PAUSED;
}

}  // namespace ferry::http::http1
