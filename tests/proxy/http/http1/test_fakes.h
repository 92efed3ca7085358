#pragma once
// Recording fakes for the HTTP/1 codec tests: they turn codec events into plain data the
// tests compare (so a one-piece and a byte-at-a-time parse can be checked for equality).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/buffer/buffer.h"
#include "proxy/http/codec.h"
#include "proxy/http/http1/server_codec.h"

namespace ferry::http::http1 {

// Fields as "name: value\n" lines, in order.
inline std::string describeFields(const HeaderMap& headers) {
  std::string out;
  for (const auto& f : headers.fields())
    out.append(f.name).append(": ").append(f.value).append("\n");
  return out;
}

// One decoded request.
struct RecordedRequest : public RequestDecoder {
  RequestHeadersPtr headers;
  bool headers_end_stream = false;
  std::string body;
  int data_calls = 0;
  bool ended = false;  // end_stream seen (on headers or data)
  bool data_after_end = false;
  ResponseEncoder* encoder = nullptr;
  std::function<void(RecordedRequest&)> on_end;  // runs when the request ends

  void onRequestHeaders(RequestHeadersPtr h, bool end_stream) override {
    headers = std::move(h);
    headers_end_stream = end_stream;
    if (end_stream) end();
  }
  void onRequestData(Buffer& data, bool end_stream) override {
    if (ended) data_after_end = true;
    ++data_calls;
    body += data.toString();
    data.clear();
    if (end_stream) end();
  }
  void end() {
    ended = true;
    if (on_end) on_end(*this);
  }
  // Everything but how the body was split, for comparing parses.
  std::string summary() const {
    if (!headers) return "<no headers>";
    return headers->method + " " + headers->path + " authority=" + headers->authority + "\n" +
           describeFields(headers->headers) +
           "end_on_headers=" + std::to_string(headers_end_stream) + " body=" + body +
           " ended=" + std::to_string(ended);
  }
};

class FakeServerCallbacks : public ServerConnectionCallbacks {
 public:
  RequestDecoder& onNewRequest(ResponseEncoder& encoder) override {
    requests.push_back(std::make_unique<RecordedRequest>());
    requests.back()->encoder = &encoder;
    if (on_end) requests.back()->on_end = on_end;
    return *requests.back();
  }
  void readDisableConnection(bool disable) override { read_disables.push_back(disable); }
  std::vector<std::unique_ptr<RecordedRequest>> requests;
  std::vector<bool> read_disables;               // readDisableConnection calls
  std::function<void(RecordedRequest&)> on_end;  // copied into each new request
};

// One response's events, and its stream's (ClientConnection::newStream(r, r)).
struct RecordedResponse : public ResponseDecoder, public ClientStreamCallbacks {
  std::vector<ClientResetReason> resets;
  int requests_sent = 0;
  int above_high = 0;
  int below_low = 0;
  std::vector<int> informational;
  ResponseHeadersPtr headers;
  bool headers_end_stream = false;
  std::string body;
  bool ended = false;
  bool data_after_end = false;
  std::function<void()> on_end;

  void onInformational(ResponseHeadersPtr h) override { informational.push_back(h->status); }
  void onResponseHeaders(ResponseHeadersPtr h, bool end_stream) override {
    headers = std::move(h);
    headers_end_stream = end_stream;
    if (end_stream) end();
  }
  void onResponseData(Buffer& data, bool end_stream) override {
    if (ended) data_after_end = true;
    body += data.toString();
    data.clear();
    if (end_stream) end();
  }
  void onStreamReset(ClientResetReason reason, uint32_t) override { resets.push_back(reason); }
  void onRequestSent() override { ++requests_sent; }
  void onAboveWriteBufferHighWatermark() override { ++above_high; }
  void onBelowWriteBufferLowWatermark() override { ++below_low; }
  void end() {
    ended = true;
    if (on_end) on_end();
  }
  std::string summary() const {
    std::string out;
    for (int s : informational) out += "1xx " + std::to_string(s) + "\n";
    if (!headers) return out + "<no headers>";
    return out + std::to_string(headers->status) + " " + headers->reason + "\n" +
           describeFields(headers->headers) +
           "end_on_headers=" + std::to_string(headers_end_stream) + " body=" + body +
           " ended=" + std::to_string(ended);
  }
};

// The HTTP/1.1 codec's own question (not part of ServerCodec): a request was decoded and its
// response is not complete yet.
inline bool streamActive(const ServerCodec& codec) {
  return static_cast<const Http1ServerCodec&>(codec).streamActive();
}

inline Buffer bufferOf(std::string_view bytes) {
  Buffer b;
  b.add(bytes);
  return b;
}

// Answers `request` "200 ok" (Content-Length framed) through its encoder: set as
// FakeServerCallbacks::on_end, it keeps requests flowing (pipelined ones, HTTP/2 streams).
inline void answerOk(RecordedRequest& request) {
  ResponseHeaders headers;
  headers.status = 200;
  headers.headers.add("Content-Length", "2");
  request.encoder->encodeHeaders(headers, false);
  Buffer body = bufferOf("ok");
  request.encoder->encodeData(body, true);
}

}  // namespace ferry::http::http1
