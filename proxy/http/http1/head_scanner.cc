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

namespace {

// request-line = method SP request-target SP HTTP-version, the line holding no NUL, CR or LF:
// exactly two single spaces, neither first nor last, and no HTAB (what checkStartLineByte()
// and endLine() check byte by byte).
bool wellFormedRequestLine(std::string_view line) {
  const size_t first = findNulCrLfOrBlank(line);
  if (first == 0 || first == line.size() || line[first] != ' ') return false;
  const size_t second = first + 1 + findNulCrLfOrBlank(line.substr(first + 1));
  if (second == first + 1 || second >= line.size() - 1 || line[second] != ' ') return false;
  return second + 1 + findNulCrLfOrBlank(line.substr(second + 1)) == line.size();
}

}  // namespace

// The start line in one piece when all of it is here, ends in CRLF and passes the checks
// (the usual case): one search for its end and, for a request, three for its spaces, instead
// of a turn of scan()'s loop per part. Anything else (leading empty lines, a line split across
// inputs, any fault, the size limit) is left to the byte-by-byte checks, which then find the
// same error they always did.
size_t HeadScanner::skipStartLine(std::string_view bytes) {
  if (!in_start_line_ || line_length_ != 0 || saw_cr_ || bytes.empty()) return 0;
  if (bytes[0] == '\r' || bytes[0] == '\n') return 0;
  const uint64_t room = max_head_bytes_ - head_bytes_;
  if (bytes.size() > room) bytes = bytes.substr(0, static_cast<size_t>(room));
  const size_t end = findNulCrLf(bytes);
  if (end + 1 >= bytes.size() || bytes[end] != '\r' || bytes[end + 1] != '\n') return 0;
  if (mode_ == Mode::Request && !wellFormedRequestLine(bytes.substr(0, end))) return 0;
  started_ = true;
  in_start_line_ = false;
  head_bytes_ += end + 2;
  previous_ = '\n';
  return end + 2;
}

// The hot path: whole field lines at a time. In "name: value CRLF" only the first byte (SP or
// HTAB there would be obs-fold) and NUL, CR, LF need a look, so each line costs one first-byte
// test, one block-wise search and one CRLF test. Stops, without consuming it, at anything the
// byte-by-byte checks in scan() must see: the start line, a special byte that is not a plain
// line end, a line end split across inputs, the size limit. The empty line that ends the head,
// when its CRLF is here whole, ends the scan (state Done) right here.
size_t HeadScanner::skipFieldLines(std::string_view bytes) {
  if (in_start_line_ || saw_cr_) return 0;
  const uint64_t room = max_head_bytes_ - head_bytes_;
  if (bytes.size() > room) bytes = bytes.substr(0, static_cast<size_t>(room));
  size_t i = 0;
  while (i < bytes.size()) {
    if (line_length_ == 0) {
      const char first = bytes[i];
      if (first == '\r' && i + 1 < bytes.size() && bytes[i + 1] == '\n') {
        i += 2;
        state_ = State::Done;
        break;
      }
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
    i += skipStartLine(bytes.substr(i));
    i += skipFieldLines(bytes.substr(i));
    if (state_ == State::Done || i == bytes.size()) break;
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
