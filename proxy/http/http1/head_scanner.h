#pragma once
// Checks the raw bytes of a message head before llhttp sees them. llhttp 8 in its default
// (non-strict) build accepts obs-fold, a doubled space in the request line and HTTP/0.9
// request lines, and it cannot count raw head bytes; this scanner closes those gaps
// (RFC 9112 §2.2, §3, §5.2) and finds where the head ends so the parser is never fed head
// bytes the scanner has not approved. One per parser; reset() for each message. Trailers mode
// applies the same line rules to a chunked message's trailer section (no start line).

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ferry::http::http1 {

class HeadScanner {
 public:
  enum class Mode { Request, Response, Trailers };
  enum class State { Scanning, Done, Error };

  struct Result {
    State state = State::Scanning;
    // Bytes of the input that belong to the head (all of it unless state is Done).
    size_t consumed = 0;
  };

  HeadScanner(Mode mode, uint64_t max_head_bytes) : mode_(mode), max_head_bytes_(max_head_bytes) {
    reset();
  }

  // Scans the next bytes of the head. After Done or Error, further calls consume nothing.
  Result scan(std::string_view bytes);
  // Prepares for the next message's head.
  void reset();

  // True once the first byte of the start line was seen (leading empty lines don't count).
  bool started() const { return started_; }
  bool done() const { return state_ == State::Done; }
  // Set on Error: 431 when the head was too large, 400 otherwise.
  int errorStatus() const { return error_status_; }
  std::string_view errorDetail() const { return error_detail_; }

 private:
  State fail(int status, std::string_view detail);
  bool checkStartLineByte(char c);
  bool endLine();
  size_t ordinaryRun(std::string_view bytes) const;
  size_t skipStartLine(std::string_view bytes);
  size_t skipFieldLines(std::string_view bytes);

  const Mode mode_;
  const uint64_t max_head_bytes_;
  State state_ = State::Scanning;
  bool started_ = false;
  bool in_start_line_ = true;
  bool saw_cr_ = false;
  char previous_ = 0;
  size_t line_length_ = 0;
  int start_line_spaces_ = 0;
  uint64_t head_bytes_ = 0;
  int error_status_ = 0;
  std::string_view error_detail_;
};

}  // namespace ferry::http::http1
