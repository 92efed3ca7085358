#pragma once
// A deliberately independent HTTP/1.1 message reader for tests (it shares no code with ferry's
// codec): reads one request or response from a Socket, undoing chunked framing, and keeps the
// raw head so tests can assert on exact bytes.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/proxy/support/socket.h"

namespace ferry::itest {

struct HttpMessage {
  std::string raw_head;  // start line and fields, through the blank line
  // Request
  std::string method;
  std::string path;
  // Response
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;                                          // framing removed
  bool chunked = false;

  std::optional<std::string> header(std::string_view name) const;
  size_t count(std::string_view name) const;
};

enum class ParseState { Incomplete, Complete, Error };

// Parses one message from the front of `bytes`. `eof`: no more bytes will come (ends a
// close-delimited response). On Complete, `consumed` says how much of `bytes` it used.
ParseState parseMessage(std::string_view bytes, bool is_request, bool head_request, bool eof,
                        HttpMessage& out, size_t& consumed);

// Reads (and consumes) one message. A 1xx response is returned as its own message.
std::optional<HttpMessage> readResponse(Socket& socket, Deadline deadline,
                                        bool head_request = false);
std::optional<HttpMessage> readRequest(Socket& socket, Deadline deadline);
// Reads only a head (request or response); leaves the body in the socket.
std::optional<HttpMessage> readHead(Socket& socket, Deadline deadline, bool is_request);

}  // namespace ferry::itest
