#include "proxy/http/http1/head_scanner.h"

#include "proxy/http/http1/byte_search.h"

namespace ferry::http::http1 {

void HeadScanner::reset() {
  state_ = State::Scanning;
  // A trailer section has no start line, and an empty first line ends it.
  started_ = mode_ == Mode::Trailers;
  in_start_line_ = mode_ != Mode::Trailers;
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

// The ordinary bytes at the start of `bytes`, which need no look one by one: inside a field line
// all but NUL, CR and LF; inside a request line also not SP or HTAB, which checkStartLineByte()
// counts. A status line is scanned like a field line: its parts are llhttp's to check.
size_t HeadScanner::ordinaryRun(std::string_view bytes) const {
  if (in_start_line_ && mode_ == Mode::Request) return findNulCrLfOrBlank(bytes);
  return findNulCrLf(bytes);
}

// The hot path: whole field lines at a time. In "name: value CRLF" only the first byte (SP or
// HTAB there would be obs-fold) and NUL, CR, LF need a look, so each line costs one first-byte
// test, one block-wise search and one CRLF test. Stops, without consuming it, at anything the
// byte-by-byte checks in scan() must see: the start line, a special byte that is not a plain
// line end, a line end split across inputs, the empty line ending the head, the size limit.
size_t HeadScanner::skipFieldLines(std::string_view bytes) {
  if (in_start_line_ || saw_cr_) return 0;
  const uint64_t room = max_head_bytes_ - head_bytes_;
  if (bytes.size() > room) bytes = bytes.substr(0, static_cast<size_t>(room));
  size_t i = 0;
  while (i < bytes.size()) {
    if (line_length_ == 0) {
      const char first = bytes[i];
      if (first == ' ' || first == '\t' || first == '\0' || first == '\r' || first == '\n') break;
    }
    const size_t run = findNulCrLf(bytes.substr(i));
    line_length_ += run;
    i += run;
    if (i + 1 >= bytes.size() || bytes[i] != '\r' || bytes[i + 1] != '\n') break;
    i += 2;
    line_length_ = 0;
  }
  if (i > 0) {
    head_bytes_ += i;
    previous_ = bytes[i - 1];
  }
  return i;
}

HeadScanner::Result HeadScanner::scan(std::string_view bytes) {
  Result result;
  if (state_ != State::Scanning) {
    result.state = state_;
    return result;
  }
  size_t i = 0;
  for (; i < bytes.size(); ++i) {
    i += skipFieldLines(bytes.substr(i));
    if (i == bytes.size()) break;
    if (!saw_cr_ && line_length_ > 0) {
      // Past the first byte of a line: skip the ordinary bytes in bulk. The byte that stops the
      // run, if any, takes the checks below.
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
