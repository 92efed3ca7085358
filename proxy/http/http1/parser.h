#pragma once
// A thin owner of one llhttp parser, shared by the server and client codecs. execute() feeds
// bytes and reports what happened; llhttp callbacks only record (fields, target, body bytes),
// and the parser pauses at the end of a head and at the end of a message, so codec code (and
// the decoders it calls) never runs inside llhttp. Head bytes go through a HeadScanner first.
// Lenient llhttp flags stay off.

#include <llhttp.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/buffer/buffer.h"
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

class Parser {
 public:
  struct Result {
    size_t consumed = 0;
    bool head_complete = false;     // fields(), target(), reason() hold the head now
    bool message_complete = false;  // the message ended; body() holds its last bytes
    bool error = false;             // see errorStatus() / errorDetail()
  };

  Parser(llhttp_type_t type, uint64_t max_head_bytes);
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

  HeaderMap takeFields() { return std::move(fields_); }
  const HeaderMap& fields() const { return fields_; }
  const std::string& target() const { return target_; }
  const std::string& reason() const { return reason_; }
  Buffer& body() { return body_; }

  bool headStarted() const { return scanner_.started(); }
  bool headDone() const { return head_done_; }
  int errorStatus() const { return error_status_; }
  const std::string& errorDetail() const { return error_detail_; }

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
  Result fail(Result result, int status, std::string detail);

  llhttp_settings_t settings_;
  llhttp_t parser_;
  HeadScanner scanner_;
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
  int error_status_ = 0;
  std::string error_detail_;
};

}  // namespace ferry::http::http1
