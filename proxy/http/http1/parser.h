#pragma once
// A thin owner of one llhttp parser, shared by the server and client codecs. execute() feeds
// bytes and reports what happened; llhttp callbacks only record (fields, target, body bytes),
// and the parser pauses at the end of a head and at the end of a message, so codec code (and
// the decoders it calls) never runs inside llhttp. Head bytes go through a HeadScanner first.
// llhttp is compiled in strict mode (LLHTTP_STRICT_MODE, top CMakeLists.txt) and its lenient
// flags stay off; chunk-size lines are bounded here (llhttp has no limit on them).

#include <llhttp.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/buffer/buffer.h"
#include "proxy/http/codec.h"
#include "proxy/http/header_map.h"
#include "proxy/http/http1/head_scanner.h"

namespace ferry::http::http1 {

// A field name or value as llhttp reports it: normally one piece pointing into the bytes being
// parsed, used from there without a copy. A piece cut by the end of the input is copied by
// spill() before execute() returns (the caller may then drop those bytes) and later pieces are
// appended to the copy.
class SpanAccumulator {
 public:
  void append(std::string_view piece);
  // Copies a piece that still points into the caller's bytes.
  void spill();
  std::string_view view() const { return copied_.empty() ? pending_ : copied_; }
  void clear();

 private:
  std::string_view pending_;  // set only while copied_ is empty
  std::string copied_;
};

// A chunk-size line (size, extensions, CRLF; RFC 9112 §7.1) longer than this is refused: a
// size needs 16 hex digits at most, and ferry neither reads nor forwards extensions, so only a
// peer stuffing bytes into them would come near it.
inline constexpr size_t kMaxChunkLineBytes = 1024;

class Parser {
 public:
  struct Result {
    size_t consumed = 0;
    bool head_complete = false;     // fields(), target(), reason() hold the head now
    bool message_complete = false;  // the message ended; body() holds its last bytes
    bool error = false;             // see errorStatus() / errorDetail()
  };

  // `max_fields`: more header fields than this in a head is an error (431); 0 = no limit.
  Parser(llhttp_type_t type, uint64_t max_head_bytes, uint32_t max_fields = 0);
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  // Feeds the next bytes (may be empty: a paused parser may still complete a message).
  // Stops after a head completes or a message completes, so consumed may be less than size.
  Result execute(std::string_view bytes);
  // Same, over the first contiguous slice of `data`; drains what was consumed.
  Result execute(Buffer& data);
  // The peer closed: completes a close-delimited message. Returns true when it did.
  bool finish();

  // For a response to HEAD: the next head announces no body whatever it says (RFC 9110 §9.3.2).
  void setSkipBody(bool skip) { skip_body_ = skip; }

  // Moves the head's fields into `into` (one copy of what the map keeps inline; a returned map
  // would be copied twice).
  void takeFields(HeaderMap& into) { into = std::move(fields_); }
  const HeaderMap& fields() const { return fields_; }
  const std::string& target() const { return target_; }
  const std::string& reason() const { return reason_; }
  Buffer& body() { return body_; }

  bool headStarted() const { return scanner_.started(); }
  bool headDone() const { return head_done_; }
  int errorStatus() const { return error_status_; }
  const std::string& errorDetail() const { return error_detail_; }
  CodecErrorKind errorKind() const { return error_kind_; }

  const llhttp_t& raw() const { return parser_; }
  llhttp_method_t method() const { return static_cast<llhttp_method_t>(parser_.method); }
  int statusCode() const { return parser_.status_code; }
  uint8_t httpMinor() const { return parser_.http_minor; }
  uint8_t httpMajor() const { return parser_.http_major; }
  bool chunked() const { return (parser_.flags & F_CHUNKED) != 0; }
  bool hasContentLength() const { return (parser_.flags & F_CONTENT_LENGTH) != 0; }
  bool hasTransferEncoding() const { return (parser_.flags & F_TRANSFER_ENCODING) != 0; }
  // Valid in the head-complete window: the announced Content-Length.
  uint64_t contentLength() const { return parser_.content_length; }
  bool shouldKeepAlive() const { return llhttp_should_keep_alive(&parser_) != 0; }
  bool needsEof() const { return llhttp_message_needs_eof(&parser_) != 0; }

 private:
  static Parser& self(llhttp_t* p) { return *static_cast<Parser*>(p->data); }
  static int onMessageBegin(llhttp_t* p);
  static int onUrl(llhttp_t* p, const char* at, size_t length);
  static int onStatus(llhttp_t* p, const char* at, size_t length);
  static int onHeaderField(llhttp_t* p, const char* at, size_t length);
  static int onHeaderFieldComplete(llhttp_t* p);
  static int onHeaderValue(llhttp_t* p, const char* at, size_t length);
  static int onHeaderValueComplete(llhttp_t* p);
  static int onHeadersComplete(llhttp_t* p);
  static int onBody(llhttp_t* p, const char* at, size_t length);
  static int onMessageComplete(llhttp_t* p);
  static int onChunkHeader(llhttp_t* p);
  static int onChunkComplete(llhttp_t* p);
  Result fail(Result result, int status, std::string detail,
              CodecErrorKind kind = CodecErrorKind::Malformed);
  // Records an error raised inside an llhttp callback (execute() reports it).
  int failInCallback(int status, std::string detail, CodecErrorKind kind);
  // Runs llhttp over `feed`, through the pauses that are not the codec's business (an
  // Upgrade request, the start of each chunk-size line). Returns llhttp's last code and sets
  // *stop to where it stopped.
  llhttp_errno_t run(std::string_view feed, size_t* stop);
  // While a chunk-size line is open: false (and an error recorded) when `rest` takes it past
  // kMaxChunkLineBytes before its LF.
  bool checkChunkLine(std::string_view rest);
  // Request method token seen so far in `bytes` (the start of a request), to answer 501 for
  // a method that is a token llhttp does not know and 400 for one that is no token.
  // Returns where in `bytes` the method ended (its SP), or npos when it did not end there.
  size_t trackMethod(std::string_view bytes);
  Result methodError(Result result);
  // The head scanner refused `bytes`: true when the method, which comes before anything the
  // scanner checks, is itself to be refused (then that is the answer, as it would be had the
  // request line arrived in a read of its own). `method_end` is trackMethod()'s result.
  bool methodRefusedFirst(std::string_view bytes, size_t method_end);

  llhttp_settings_t settings_;
  llhttp_t parser_;
  HeadScanner scanner_;
  // The trailer section of a chunked message: the same line rules as the head (llhttp takes a
  // bare LF or obs-fold there), checked before llhttp reads it.
  HeadScanner trailer_scanner_;
  bool in_trailers_ = false;
  bool trailer_pause_ = false;  // the pause llhttp reports comes from the last chunk's header
  bool skip_body_ = false;
  bool head_done_ = false;
  bool head_complete_event_ = false;
  bool message_complete_event_ = false;
  HeaderMap fields_;
  SpanAccumulator name_;
  SpanAccumulator value_;
  std::string target_;
  std::string reason_;
  Buffer body_;
  const uint32_t max_fields_;
  uint32_t field_count_ = 0;
  // Method tracking (requests): the bytes before the first SP of the request line.
  enum class MethodState { Scanning, Token, NotToken };
  MethodState method_state_ = MethodState::Scanning;
  bool method_started_ = false;
  bool method_rejected_ = false;  // llhttp refused the method; waiting for its end
  // Chunked bodies: bytes of the current chunk-size line seen so far, when one is open.
  bool in_chunk_line_ = false;
  size_t chunk_line_bytes_ = 0;
  uint64_t chunk_size_ = 0;
  bool chunk_pause_ = false;  // the pause llhttp reports comes from onChunkComplete
  int error_status_ = 0;
  std::string error_detail_;
  CodecErrorKind error_kind_ = CodecErrorKind::Malformed;
};

}  // namespace ferry::http::http1
