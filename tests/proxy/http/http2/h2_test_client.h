#pragma once
// Test harness for the HTTP/2 server codec: a real nghttp2 CLIENT session that produces the
// frames the codec decodes and decodes the frames the codec writes, fakes for the core's side
// (ServerConnectionCallbacks, RequestDecoder, StreamCallbacks), and a raw frame writer for
// what a well-behaved client library would never send (attacks, malformed requests).

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proxy/buffer/buffer.h"
#include "proxy/http/codec.h"
#include "proxy/http/http2/codec_factory.h"

namespace ferry::http::http2::testing {

using Fields = std::vector<std::pair<std::string, std::string>>;

// ---- The core's side ------------------------------------------------------------------------

struct FakeStream : public RequestDecoder, public StreamCallbacks {
  ResponseEncoder* encoder = nullptr;
  RequestHeadersPtr headers;
  bool headers_end_stream = false;
  std::string body;
  int data_calls = 0;
  bool ended = false;
  std::vector<StreamResetReason> resets;
  int above_high = 0;
  int below_low = 0;
  std::function<void(FakeStream&)> on_headers;
  std::function<void(FakeStream&)> on_data;

  void onRequestHeaders(RequestHeadersPtr h, bool end_stream) override {
    headers = std::move(h);
    headers_end_stream = end_stream;
    ended = end_stream;
    if (on_headers) on_headers(*this);
  }
  void onRequestData(Buffer& data, bool end_stream) override {
    ++data_calls;
    body += data.toString();
    data.clear();
    if (end_stream) ended = true;
    if (on_data) on_data(*this);
  }
  void onStreamReset(StreamResetReason reason) override { resets.push_back(reason); }
  void onAboveWriteBufferHighWatermark() override { ++above_high; }
  void onBelowWriteBufferLowWatermark() override { ++below_low; }
};

class FakeServerCallbacks : public ServerConnectionCallbacks {
 public:
  RequestDecoder& onNewRequest(ResponseEncoder& encoder) override {
    streams.push_back(std::make_unique<FakeStream>());
    FakeStream& stream = *streams.back();
    stream.encoder = &encoder;
    encoder.setStreamCallbacks(stream);
    if (on_new_stream) on_new_stream(stream);
    return stream;
  }
  void onStreamRefused(const CodecError& error) override { refused.push_back(error); }
  // HTTP/1.1 only: an HTTP/2 codec should never call it (counted so a test can say so).
  void readDisableConnection(bool) override { ++read_disable_calls; }
  int read_disable_calls = 0;

  std::vector<std::unique_ptr<FakeStream>> streams;
  std::vector<CodecError> refused;
  std::function<void(FakeStream&)> on_new_stream;
};

// ---- The client ------------------------------------------------------------------------------

struct ClientStream {
  std::vector<Fields> heads;  // every header block received (1xx, final, trailers)
  std::string body;
  bool ended = false;
  bool reset = false;
  uint32_t reset_code = 0;
};

struct Goaway {
  int32_t last_stream_id;
  uint32_t error_code;
};

class H2Client {
 public:
  // `settings` go in the client's first SETTINGS frame.
  explicit H2Client(std::vector<nghttp2_settings_entry> settings = {});
  ~H2Client();

  // Queues a request; returns its stream id. `body` null: no body (END_STREAM on HEADERS).
  int32_t request(const Fields& fields, const std::string* body = nullptr);
  // GET https://example.com<path>
  int32_t get(const std::string& path = "/", const Fields& extra = {});
  void reset(int32_t stream_id, uint32_t code = NGHTTP2_CANCEL);
  // Everything the client session wants to send now.
  std::string takeOutput();
  // Feeds the server's bytes to the client session; false if the client saw a fatal error.
  bool receive(Buffer& bytes);

  ClientStream& stream(int32_t id) { return streams_[id]; }
  const std::vector<Goaway>& goaways() const { return goaways_; }
  int pingAcks() const { return ping_acks_; }
  nghttp2_session* session() { return session_; }

  std::map<int32_t, ClientStream> streams_;
  std::vector<Goaway> goaways_;
  int ping_acks_ = 0;
  std::map<int32_t, std::string> bodies_;  // request bodies being sent

 private:
  nghttp2_session* session_ = nullptr;
};

// The server codec under test with the client and the fakes, and the pump between them.
class Conversation {
 public:
  explicit Conversation(Http2Settings settings = {},
                        std::vector<nghttp2_settings_entry> client_settings = {});

  // Moves bytes both ways until neither side has anything to say. False if the server's
  // dispatch failed.
  bool exchange();
  // Only client -> server (the server's answer stays in `output`).
  bool send();
  // Sends raw bytes to the server.
  bool sendRaw(const std::string& bytes);
  // Hands the server's output to the client.
  void deliver();

  Buffer output;
  FakeServerCallbacks callbacks;
  std::unique_ptr<ServerCodec> codec;
  H2Client client;
  bool dispatch_ok = true;
};

// ---- Raw frames ------------------------------------------------------------------------------

std::string frame(uint8_t type, uint8_t flags, int32_t stream_id, const std::string& payload);
// HPACK (RFC 7541 §6.2.2): a literal field without indexing, new name.
std::string literal(const std::string& name, const std::string& value);
// HPACK §6.2.1: a literal with incremental indexing (enters the dynamic table), new name.
std::string indexedLiteral(const std::string& name, const std::string& value);
// HPACK §6.1: an indexed field (index 62 = the newest dynamic table entry).
std::string indexed(uint32_t index);
// The request pseudo-headers of GET https://example.com<path>, as literals.
std::string getBlock(const std::string& path = "/");
// The client connection preface plus an empty SETTINGS frame.
std::string preface();

// Frames found in `bytes`: (type, flags, stream id, payload).
struct RawFrame {
  uint8_t type;
  uint8_t flags;
  int32_t stream_id;
  std::string payload;
};
std::vector<RawFrame> parseFrames(const std::string& bytes);

}  // namespace ferry::http::http2::testing
