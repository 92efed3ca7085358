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
  // execute() spills both accumulators after every run, and they are nearly always empty then.
  if (pending_.empty()) return;
  copied_.append(pending_);
  pending_ = {};
}

void SpanAccumulator::clear() {
  pending_ = {};
  copied_.clear();
}

namespace {
// llhttp_execute() is never given a null pointer, even for no bytes (an empty string_view
// may hold one, and pointer arithmetic on it is undefined behaviour).
constexpr char kNoBytes[1] = {0};
}  // namespace

Parser::Parser(llhttp_type_t type, uint64_t max_head_bytes, uint32_t max_fields)
    : scanner_(type == HTTP_REQUEST ? HeadScanner::Mode::Request : HeadScanner::Mode::Response,
               max_head_bytes),
      trailer_scanner_(HeadScanner::Mode::Trailers, max_head_bytes),
      max_fields_(max_fields) {
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
  settings_.on_chunk_header = onChunkHeader;
  settings_.on_chunk_complete = onChunkComplete;
  // llhttp_init leaves every llhttp_set_lenient_* flag off; this parser never sets one.
  llhttp_init(&parser_, type, &settings_);
  parser_.data = this;
}

Parser::Result Parser::fail(Result result, int status, std::string detail, CodecErrorKind kind) {
  if (error_status_ == 0) {
    error_status_ = status;
    error_detail_ = std::move(detail);
    error_kind_ = kind;
  }
  result.error = true;
  return result;
}

int Parser::failInCallback(int status, std::string detail, CodecErrorKind kind) {
  if (error_status_ == 0) {
    error_status_ = status;
    error_detail_ = std::move(detail);
    error_kind_ = kind;
  }
  return HPE_USER;
}

size_t Parser::trackMethod(std::string_view bytes) {
  if (method_state_ != MethodState::Scanning) return std::string_view::npos;
  size_t start = 0;
  const bool started_here = !method_started_;
  if (started_here) {
    // Empty lines before the request line.
    while (start < bytes.size() && (bytes[start] == '\r' || bytes[start] == '\n')) ++start;
    if (start == bytes.size()) return std::string_view::npos;
    method_started_ = true;
  }
  // The method ends at the first SP after its first byte (a leading SP is no token byte).
  const size_t end = bytes.find(' ', started_here ? start + 1 : 0);
  const std::string_view part =
      bytes.substr(start, (end == std::string_view::npos ? bytes.size() : end) - start);
  // method = token (RFC 9110 §9.1).
  if (!part.empty() && !isToken(part)) {
    method_state_ = MethodState::NotToken;
    return std::string_view::npos;
  }
  if (end == std::string_view::npos) return std::string_view::npos;
  method_state_ = MethodState::Token;
  return end;
}

bool Parser::methodRefusedFirst(std::string_view bytes, size_t method_end) {
  if (method_state_ == MethodState::NotToken) return true;
  // A method that ended in an earlier read was accepted by llhttp then. One that ended in
  // this read has not been seen by llhttp: let it judge the method alone.
  if (method_state_ != MethodState::Token || method_end == std::string_view::npos) return false;
  const std::string_view request_line_start = bytes.substr(0, method_end + 1);
  if (llhttp_execute(&parser_, request_line_start.data(), request_line_start.size()) !=
      HPE_INVALID_METHOD) {
    return false;
  }
  method_rejected_ = true;
  return true;
}

Parser::Result Parser::methodError(Result result) {
  switch (method_state_) {
    // RFC 9110 §9.1: a method the server does not implement is answered 501.
    case MethodState::Token:
      return fail(result, 501, "method not implemented", CodecErrorKind::UnknownMethod);
    case MethodState::NotToken:
      return fail(result, 400, "invalid method");
    case MethodState::Scanning:
      break;
  }
  return result;  // the method has not ended yet: wait for more bytes
}

bool Parser::checkChunkLine(std::string_view rest) {
  const size_t room = kMaxChunkLineBytes - chunk_line_bytes_;
  if (rest.substr(0, room).find('\n') != std::string_view::npos) {
    in_chunk_line_ = false;
    return true;
  }
  if (rest.size() >= room) {
    failInCallback(400, "chunk-size line too long", CodecErrorKind::ChunkLineTooLong);
    return false;
  }
  chunk_line_bytes_ += rest.size();
  return true;
}

llhttp_errno_t Parser::run(std::string_view feed, size_t* stop) {
  // `feed` may be cut short below (at the end of a trailer section); `start` stays.
  const char* start = feed.empty() ? kNoBytes : feed.data();
  size_t pos = 0;
  while (true) {
    if (in_chunk_line_ && !checkChunkLine(feed.substr(pos))) {
      *stop = pos;
      return HPE_USER;
    }
    llhttp_errno_t err = llhttp_execute(&parser_, start + pos, feed.size() - pos);
    if (err == HPE_PAUSED_UPGRADE) {
      // An Upgrade request is parsed as a plain request (its Upgrade field is dropped):
      // parsing simply continues.
      pos = static_cast<size_t>(llhttp_get_error_pos(&parser_) - start);
      llhttp_resume_after_upgrade(&parser_);
      continue;
    }
    if (err == HPE_PAUSED && chunk_pause_) {
      // A chunk ended: check the next chunk-size line before llhttp reads it.
      chunk_pause_ = false;
      pos = static_cast<size_t>(llhttp_get_error_pos(&parser_) - start);
      llhttp_resume(&parser_);
      continue;
    }
    if (err == HPE_PAUSED && trailer_pause_) {
      // The last chunk's size line ended: the trailer section follows; llhttp reads only what
      // the trailer scanner approved.
      trailer_pause_ = false;
      pos = static_cast<size_t>(llhttp_get_error_pos(&parser_) - start);
      llhttp_resume(&parser_);
      HeadScanner::Result scanned = trailer_scanner_.scan(feed.substr(pos));
      if (scanned.state == HeadScanner::State::Error) {
        failInCallback(400, std::string(trailer_scanner_.errorDetail()) + " (trailers)",
                       CodecErrorKind::BodyFraming);
        *stop = pos;
        return HPE_USER;
      }
      feed = feed.substr(0, pos + scanned.consumed);
      continue;
    }
    *stop = err == HPE_PAUSED ? static_cast<size_t>(llhttp_get_error_pos(&parser_) - start)
                              : feed.size();
    return err;
  }
}

Parser::Result Parser::execute(std::string_view bytes) {
  Result result;
  if (error_status_ != 0) return fail(result, error_status_, error_detail_, error_kind_);
  const bool request = parser_.type == HTTP_REQUEST;
  const size_t method_end = request && method_state_ == MethodState::Scanning
                                ? trackMethod(bytes)
                                : std::string_view::npos;
  std::string_view feed = bytes;
  if (!head_done_) {
    HeadScanner::Result scanned = scanner_.scan(bytes);
    if (scanned.state == HeadScanner::State::Error) {
      // The first error in the stream wins, however the bytes were split into reads.
      if (request && methodRefusedFirst(bytes, method_end)) return methodError(result);
      return fail(
          result, scanner_.errorStatus(), std::string(scanner_.errorDetail()),
          scanner_.errorStatus() == 431 ? CodecErrorKind::HeadTooLarge : CodecErrorKind::Malformed);
    }
    // Never let llhttp see bytes past the end of the head the scanner approved.
    feed = bytes.substr(0, scanned.consumed);
  } else if (in_trailers_) {
    HeadScanner::Result scanned = trailer_scanner_.scan(bytes);
    if (scanned.state == HeadScanner::State::Error) {
      return fail(result, 400, std::string(trailer_scanner_.errorDetail()) + " (trailers)",
                  CodecErrorKind::BodyFraming);
    }
    feed = bytes.substr(0, scanned.consumed);
  }
  if (method_rejected_) {
    // llhttp stopped at the method; the rest of it decides between 400 and 501.
    result.consumed = feed.size();
    return methodError(result);
  }

  size_t consumed = 0;
  llhttp_errno_t err = run(feed, &consumed);
  // A name or value cut by the end of `bytes` continues in the next call, when these bytes
  // may be gone.
  name_.spill();
  value_.spill();
  if (err == HPE_PAUSED) {
    llhttp_resume(&parser_);
  } else if (err != HPE_OK) {
    if (error_status_ != 0) return fail(result, error_status_, error_detail_, error_kind_);
    if (err == HPE_INVALID_METHOD && request) {
      method_rejected_ = true;
      result.consumed = feed.size();
      return methodError(result);
    }
    std::string detail = llhttp_errno_name(err);
    if (const char* reason = llhttp_get_error_reason(&parser_); reason != nullptr) {
      detail += ": ";
      detail += reason;
    }
    // After the head, only the body's framing can be wrong (RFC 9112 §6, §7.1).
    return fail(result, 400, std::move(detail),
                head_done_ ? CodecErrorKind::BodyFraming : CodecErrorKind::Malformed);
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
  if (in_trailers_ && trailer_scanner_.done() && !result.message_complete) {
    return fail(result, 400, "trailer framing mismatch", CodecErrorKind::BodyFraming);
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
  parser.fields_.clear();
  parser.name_.clear();
  parser.value_.clear();
  parser.target_.clear();
  parser.reason_.clear();
  parser.field_count_ = 0;
  parser.in_chunk_line_ = false;
  parser.in_trailers_ = false;
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
  // A limit on the field count as well as on bytes: many tiny fields cost far more per byte
  // (in ferry and in every hop after it) than a few large ones.
  if (parser.max_fields_ != 0 && ++parser.field_count_ > parser.max_fields_) {
    return parser.failInCallback(431, "too many header fields", CodecErrorKind::TooManyFields);
  }
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
  if (chunked) {
    // The first chunk-size line starts right after the head.
    parser.in_chunk_line_ = true;
    parser.chunk_line_bytes_ = 0;
  }
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
  parser.method_state_ = MethodState::Scanning;
  parser.method_started_ = false;
  parser.in_chunk_line_ = false;
  parser.in_trailers_ = false;
  return HPE_PAUSED;
}

int Parser::onChunkHeader(llhttp_t* p) {
  Parser& parser = self(p);
  parser.in_chunk_line_ = false;
  parser.chunk_size_ = p->content_length;  // llhttp holds the chunk's size here
  if (parser.chunk_size_ != 0) return 0;
  // The last chunk: pause so run() checks the trailer section before llhttp reads it.
  parser.in_trailers_ = true;
  parser.trailer_scanner_.reset();
  parser.trailer_pause_ = true;
  return HPE_PAUSED;
}

int Parser::onChunkComplete(llhttp_t* p) {
  Parser& parser = self(p);
  // After the last chunk come the trailers and the end of the message, not a size line.
  if (parser.chunk_size_ == 0) return 0;
  // Pause where the next chunk-size line starts, so run() checks it before llhttp reads it.
  parser.in_chunk_line_ = true;
  parser.chunk_line_bytes_ = 0;
  parser.chunk_pause_ = true;
  return HPE_PAUSED;
}

}  // namespace ferry::http::http1
