#include "tests/integration/forwarding/support/raw_http.h"

#include <algorithm>
#include <cctype>

#include "integration/harness/http1_to_http2.h"
#include "integration/harness/http2_client.h"
#include "integration/harness/http_client.h"

namespace ferry::fwdtest {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string nameOf(const std::string& line) {
  size_t colon = line.find(':');
  return lower(colon == std::string::npos ? line : line.substr(0, colon));
}

}  // namespace

StatusOr<RawResponse> rawExchange(uint16_t port, const std::string& request,
                                  std::chrono::milliseconds timeout,
                                  const testing::ClientTls* tls) {
  testing::HttpClient c;
  if (tls != nullptr) c.setTls(*tls);
  Status s = c.connect(port);
  if (!s.isOk()) return s;
  s = c.send(request);
  if (!s.isOk()) return s;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string in;
  RawResponse r;
  size_t head_end = std::string::npos;
  size_t need = 0;
  while (true) {
    if (head_end == std::string::npos) {
      head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::string head = in.substr(0, head_end);
        size_t pos = head.find("\r\n");
        r.status_line = head.substr(0, pos);
        while (pos != std::string::npos) {
          size_t next = head.find("\r\n", pos + 2);
          r.header_lines.push_back(
              head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2));
          pos = next;
        }
        for (const auto& l : r.header_lines) {
          if (nameOf(l) == "content-length") need = std::stoul(l.substr(l.find(':') + 1));
        }
      }
    }
    if (head_end != std::string::npos && in.size() >= head_end + 4 + need) {
      r.body = in.substr(head_end + 4, need);
      r.raw = in;
      return r;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return unavailable("timeout; got: " + in);
    std::string more = c.readSome(left);
    if (more.empty()) {
      if (c.isClosedByPeer(std::chrono::milliseconds(0))) {
        return unavailable("closed before the response ended; got: " + in);
      }
      continue;
    }
    in += more;
  }
}

StatusOr<RawResponse> rawExchangeHttp2(uint16_t port, const std::string& request,
                                       std::chrono::milliseconds timeout,
                                       const testing::ClientTls* tls) {
  testing::Http2Client c;
  if (tls != nullptr) c.setTls(*tls);
  Status s = c.connect(port, timeout);
  if (!s.isOk()) return s;
  testing::Http1ToHttp2 raw(c);
  s = raw.feed(request);
  if (!s.isOk()) return s;
  if (raw.streams().size() != 1) return invalidArgument("expected one whole request");
  auto response = c.readResponse(raw.streams()[0], timeout);
  if (!response.isOk()) return response.status();
  RawResponse r;
  r.http2 = true;
  r.status_line = "HTTP/2 " + std::to_string(response->status);
  r.raw = r.status_line + "\r\n";
  for (const auto& [name, value] : response->headers) {
    r.header_lines.push_back(name + ": " + value);
    r.raw += r.header_lines.back() + "\r\n";
  }
  r.body = response->body;
  r.raw += "\r\n" + r.body;
  return r;
}

RawResponse asHttp2(const RawResponse& r) {
  RawResponse out = r;
  out.http2 = true;
  // "HTTP/1.1 409 Conflict" -> "HTTP/2 409" (RFC 9113 section 8.3.2: :status only).
  const size_t sp = r.status_line.find(' ');
  out.status_line = "HTTP/2 " + r.status_line.substr(sp + 1, 3);
  out.raw = out.status_line + "\r\n";
  for (auto& line : out.header_lines) {
    const size_t colon = line.find(':');
    line = lower(line.substr(0, colon)) + (colon == std::string::npos ? "" : line.substr(colon));
    out.raw += line + "\r\n";
  }
  out.raw += "\r\n" + out.body;
  return out;
}

std::vector<std::string> endToEndLines(const RawResponse& r) {
  std::vector<std::string> hop = {"connection", "keep-alive", "transfer-encoding"};
  for (const auto& l : r.header_lines) {
    if (nameOf(l) != "connection") continue;
    std::string v = lower(l.substr(l.find(':') + 1));
    size_t start = 0;
    while (start < v.size()) {
      size_t comma = v.find(',', start);
      std::string token =
          v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      token.erase(0, token.find_first_not_of(" \t"));
      token.erase(token.find_last_not_of(" \t") + 1);
      if (!token.empty()) hop.push_back(token);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  std::vector<std::string> out;
  for (const auto& l : r.header_lines) {
    if (std::find(hop.begin(), hop.end(), nameOf(l)) == hop.end()) out.push_back(l);
  }
  return out;
}

}  // namespace ferry::fwdtest
