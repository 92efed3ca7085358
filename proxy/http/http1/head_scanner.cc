#include "proxy/http/http1/head_scanner.h"

namespace ferry::http::http1 {

void HeadScanner::reset() {
  state_ = State::Scanning;
  started_ = false;
  in_start_line_ = true;
  saw_cr_ = false;
  previous_ = 0;
  line_length_ = 0;
  start_line_spaces_ = 0;
  head_bytes_ = 0;
  error_status_ = 0;
  error_detail_ = {};
}

HeadScanner::State HeadScanner::fail(int status, std::string_view detail) {
  state_ = State::Error;
  error_status_ = status;
  error_detail_ = detail;
  return state_;
}

// request-line = method SP request-target SP HTTP-version (RFC 9112 §3): exactly two single
// spaces, no other whitespace. The parts themselves are checked by llhttp.
bool HeadScanner::checkStartLineByte(char c) {
  if (mode_ != Mode::Request) return true;
  if (c == '\t') return false;
  if (c == ' ') {
    if (line_length_ == 0 || previous_ == ' ') return false;
    ++start_line_spaces_;
  }
  return true;
}

// Called at each LF; returns true when the head ends here.
bool HeadScanner::endLine() {
  if (in_start_line_) {
    in_start_line_ = false;
    if (mode_ == Mode::Request && (start_line_spaces_ != 2 || previous_ == ' ')) {
      fail(400, "malformed request line");
    }
    return false;
  }
  return line_length_ == 0;
}

namespace {
// Bytes that end an ordinary run inside a field line.
constexpr bool isLineSpecial(unsigned char c) { return c == '\0' || c == '\r' || c == '\n'; }

size_t ordinaryRun(std::string_view bytes) {
  size_t n = 0;
  while (n < bytes.size() && !isLineSpecial(static_cast<unsigned char>(bytes[n]))) ++n;
  return n;
}
}  // namespace

HeadScanner::Result HeadScanner::scan(std::string_view bytes) {
  Result result;
  if (state_ != State::Scanning) {
    result.state = state_;
    return result;
  }
  size_t i = 0;
  for (; i < bytes.size(); ++i) {
    if (!saw_cr_ && !in_start_line_ && line_length_ > 0) {
      // Inside a field line only NUL, CR and LF matter: skip the ordinary bytes in bulk (the
      // head's hottest loop). The byte that stops the run, if any, takes the checks below.
      size_t run = ordinaryRun(bytes.substr(i));
      uint64_t room = max_head_bytes_ - head_bytes_;
      if (run > room) run = static_cast<size_t>(room);
      if (run > 0) {
        head_bytes_ += run;
        line_length_ += run;
        i += run;
        previous_ = bytes[i - 1];
        if (i == bytes.size()) break;
      }
    }
    const char c = bytes[i];
    if (!started_) {
      // llhttp skips empty lines before the start line (RFC 9112 §2.2 allows it); so do we.
      if (c == '\r' || c == '\n') continue;
      started_ = true;
    }
    if (++head_bytes_ > max_head_bytes_) {
      fail(431, "head too large");
      break;
    }
    if (saw_cr_) {
      if (c != '\n') {
        fail(400, "bare CR in head");
        break;
      }
      saw_cr_ = false;
      if (endLine()) {
        state_ = State::Done;
        ++i;
        break;
      }
      if (state_ == State::Error) break;
      line_length_ = 0;
      previous_ = c;
      continue;
    }
    if (c == '\0') {
      fail(400, "NUL in head");
      break;
    }
    if (c == '\r') {
      saw_cr_ = true;
      continue;
    }
    if (c == '\n') {
      // Only CRLF ends a line here: a bare LF is tolerated by some parsers and not by others,
      // which is how request smuggling starts (RFC 9112 §2.2 makes accepting it optional).
      fail(400, "bare LF in head");
      break;
    }
    if (in_start_line_) {
      if (!checkStartLineByte(c)) {
        fail(400, "malformed request line");
        break;
      }
    } else if (line_length_ == 0 && (c == ' ' || c == '\t')) {
      // RFC 9112 §5.2: a server MUST reject obs-fold in a request; a proxy may reject it in a
      // response too. Either way the message is refused.
      fail(400, "obsolete line folding in head");
      break;
    }
    ++line_length_;
    previous_ = c;
  }
  result.state = state_;
  result.consumed = i;
  return result;
}

}  // namespace ferry::http::http1
