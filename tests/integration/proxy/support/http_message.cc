#include "tests/integration/proxy/support/http_message.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace ferry::itest {

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parseHeadInto(std::string_view head, bool is_request, HttpMessage& out) {
  out.raw_head = std::string(head);
  size_t eol = head.find("\r\n");
  std::string_view start = head.substr(0, eol);
  if (is_request) {
    size_t sp1 = start.find(' ');
    size_t sp2 = start.rfind(' ');
    if (sp1 == std::string_view::npos || sp2 == sp1) return false;
    out.method = std::string(start.substr(0, sp1));
    out.path = std::string(start.substr(sp1 + 1, sp2 - sp1 - 1));
  } else {
    if (start.size() < 12 || start.substr(0, 5) != "HTTP/") return false;
    out.status = std::atoi(std::string(start.substr(9, 3)).c_str());
  }
  std::string_view rest = head.substr(eol + 2);
  while (!rest.empty()) {
    size_t end = rest.find("\r\n");
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 2);
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return false;
    out.headers.emplace_back(lower(line.substr(0, colon)),
                             std::string(trim(line.substr(colon + 1))));
  }
  return true;
}

// Chunked body from the front of `bytes`; Complete with `consumed` once the last chunk and
// trailers are in.
ParseState parseChunked(std::string_view bytes, std::string& body, size_t& consumed) {
  size_t pos = 0;
  body.clear();
  for (;;) {
    size_t eol = bytes.find("\r\n", pos);
    if (eol == std::string_view::npos) return ParseState::Incomplete;
    std::string size_text(bytes.substr(pos, eol - pos));
    size_t semi = size_text.find(';');
    if (semi != std::string::npos) size_text.resize(semi);
    char* end = nullptr;
    unsigned long long size = std::strtoull(size_text.c_str(), &end, 16);
    if (size_text.empty() || (end != nullptr && *end != '\0')) return ParseState::Error;
    pos = eol + 2;
    if (size == 0) {
      // Trailers end with an empty line.
      for (;;) {
        size_t t = bytes.find("\r\n", pos);
        if (t == std::string_view::npos) return ParseState::Incomplete;
        bool empty = t == pos;
        pos = t + 2;
        if (empty) {
          consumed = pos;
          return ParseState::Complete;
        }
      }
    }
    if (bytes.size() < pos + size + 2) return ParseState::Incomplete;
    body.append(bytes.substr(pos, size));
    if (bytes.substr(pos + size, 2) != "\r\n") return ParseState::Error;
    pos += size + 2;
  }
}
}  // namespace

std::optional<std::string> HttpMessage::header(std::string_view name) const {
  std::string n = lower(name);
  for (const auto& [k, v] : headers) {
    if (k == n) return v;
  }
  return std::nullopt;
}

size_t HttpMessage::count(std::string_view name) const {
  std::string n = lower(name);
  return std::count_if(headers.begin(), headers.end(), [&](const auto& h) { return h.first == n; });
}

ParseState parseMessage(std::string_view bytes, bool is_request, bool head_request, bool eof,
                        HttpMessage& out, size_t& consumed) {
  size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    return eof ? ParseState::Error : ParseState::Incomplete;
  }
  out = HttpMessage();
  if (!parseHeadInto(bytes.substr(0, head_end + 4), is_request, out)) return ParseState::Error;
  std::string_view rest = bytes.substr(head_end + 4);
  size_t head_size = head_end + 4;
  bool no_body = is_request ? false
                            : (head_request || out.status / 100 == 1 || out.status == 204 ||
                               out.status == 304);
  if (no_body) {
    consumed = head_size;
    return ParseState::Complete;
  }
  auto te = out.header("transfer-encoding");
  if (te && lower(*te).find("chunked") != std::string::npos) {
    out.chunked = true;
    size_t used = 0;
    ParseState state = parseChunked(rest, out.body, used);
    if (state == ParseState::Complete) consumed = head_size + used;
    if (state == ParseState::Incomplete && eof) return ParseState::Error;
    return state;
  }
  if (auto cl = out.header("content-length")) {
    size_t length = std::strtoull(cl->c_str(), nullptr, 10);
    if (rest.size() < length) return eof ? ParseState::Error : ParseState::Incomplete;
    out.body = std::string(rest.substr(0, length));
    consumed = head_size + length;
    return ParseState::Complete;
  }
  if (is_request) {
    consumed = head_size;
    return ParseState::Complete;
  }
  // Close-delimited response.
  if (!eof) return ParseState::Incomplete;
  out.body = std::string(rest);
  consumed = bytes.size();
  return ParseState::Complete;
}

namespace {
std::optional<HttpMessage> readMessage(Socket& socket, Deadline deadline, bool is_request,
                                       bool head_request) {
  for (;;) {
    HttpMessage message;
    size_t consumed = 0;
    bool eof = socket.eof() || socket.reset();
    ParseState state =
        parseMessage(socket.buffered(), is_request, head_request, eof, message, consumed);
    if (state == ParseState::Complete) {
      socket.buffered().erase(0, consumed);
      return message;
    }
    if (state == ParseState::Error) return std::nullopt;
    if (!socket.readMore(deadline) && !socket.eof() && !socket.reset()) return std::nullopt;
  }
}
}  // namespace

std::optional<HttpMessage> readResponse(Socket& socket, Deadline deadline, bool head_request) {
  return readMessage(socket, deadline, false, head_request);
}

std::optional<HttpMessage> readRequest(Socket& socket, Deadline deadline) {
  return readMessage(socket, deadline, true, false);
}

std::optional<HttpMessage> readHead(Socket& socket, Deadline deadline, bool is_request) {
  auto head = socket.readUntil("\r\n\r\n", deadline);
  if (!head) return std::nullopt;
  HttpMessage message;
  if (!parseHeadInto(*head, is_request, message)) return std::nullopt;
  return message;
}

}  // namespace ferry::itest
