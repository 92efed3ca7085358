// libFuzzer target: the upstream HTTP/2 codec (proxy/http/http2/client_codec.h) reading
// arbitrary owner bytes in arbitrary reads (tests/fuzz/fuzz_input.h), then the connection
// closing. Three streams are open when the bytes arrive (ids 1, 3, 5): a GET, a HEAD, and a
// POST still sending its body; an owner preface is not put in front (a missing or broken one
// is part of what is fuzzed). Checks, besides the sanitizers: no response event after a
// stream's end or reset, every stream ends or is reset once the connection closed, and a
// response that ends whole both ways is decoded the same by split reads as by one read.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "proxy/http/http2/client_codec.h"
#include "tests/fuzz/fuzz_input.h"

namespace ferry::http::http2 {
namespace {

struct Recorded : public ResponseDecoder, public ClientStreamCallbacks {
  std::string events;  // what happened, in order, for comparing reads
  bool over = false;   // ended or reset
  bool reset = false;

  void onInformational(ResponseHeadersPtr headers) override {
    check();
    events += "1xx " + std::to_string(headers->status) + ";";
  }
  void onResponseHeaders(ResponseHeadersPtr headers, bool end_stream) override {
    check();
    events += "head " + std::to_string(headers->status) + (end_stream ? " end;" : ";");
    over = end_stream;
  }
  void onResponseData(Buffer& data, bool end_stream) override {
    check();
    events += "data " + std::to_string(data.length()) + (end_stream ? " end;" : ";");
    data.drain(data.length());
    over = end_stream;
  }
  void onStreamReset(ClientResetReason reason, uint32_t) override {
    check();
    // Compared by what the pool makes of it: the owner processed nothing (the local 409) or it
    // may have (503 / a cut). Between a malformed response and the connection failing right
    // after, which one nghttp2 reports first depends on whether a write came in between.
    const bool unprocessed = reason == ClientResetReason::NotSent ||
                             reason == ClientResetReason::Refused ||
                             reason == ClientResetReason::GoAwayRefused;
    events += unprocessed ? "reset unprocessed;" : "reset;";
    over = true;
    reset = true;
  }
  void onRequestSent() override {}
  void onAboveWriteBufferHighWatermark() override {}
  void onBelowWriteBufferLowWatermark() override {}
  void check() const {
    if (over) fuzz::fail("a stream event after the stream's end or reset");
  }
};

struct NoConnectionEvents : public ClientConnectionCallbacks {
  void onGoAway(int32_t, uint32_t) override {}
  void onRemoteSettings() override {}
  void onPingAck() override {}
};

std::vector<std::string> run(fuzz::SplitInput input, bool split) {
  Buffer output;
  NoConnectionEvents connection;
  Http2ClientCodec codec(output, connection, Http2ClientSettings{}, "https");
  Recorded streams[3];
  const char* methods[3] = {"GET", "HEAD", "POST"};
  for (int i = 0; i < 3; ++i) {
    RequestHeaders head;
    head.method = methods[i];
    head.path = "/v1/stream/s";
    head.authority = "owner.test";
    ClientStream& stream = codec.newStream(streams[i], streams[i]);
    stream.encodeHeaders(head, i < 2);
  }
  Buffer pending;
  bool ok = true;
  while (ok && !input.done()) {
    if (split) {
      pending.add(input.next());
    } else {
      pending.add(input.data());
      while (!input.done()) input.next();
    }
    ok = codec.dispatch(pending);
    output.drain(output.length());
  }
  codec.onConnectionClosed();
  // Only the streams that ended whole are compared between reads. nghttp2 acts on a stream
  // error (its RST_STREAM, the stream's close) when the frames are written, which happens
  // between reads; so after an error the events that still reach a stream, and whether
  // garbage after the owner's GOAWAY is read at all, depend on where the reads fell.
  (void)ok;
  std::vector<std::string> out;
  for (auto& s : streams) {
    if (!s.over) fuzz::fail("a stream neither ended nor reset after the connection closed");
    out.push_back(s.reset ? std::string() : s.events);
  }
  return out;
}

}  // namespace
}  // namespace ferry::http::http2

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ferry::http::http2::run;
  const auto split = run(ferry::fuzz::SplitInput(data, size), true);
  const auto whole = run(ferry::fuzz::SplitInput(data, size), false);
  for (size_t i = 0; i < split.size(); ++i) {
    if (split[i].empty() || whole[i].empty() || split[i] == whole[i]) continue;
    std::fprintf(stderr, "stream %zu\nsplit reads: %s\none read: %s\n", i, split[i].c_str(),
                 whole[i].c_str());
    ferry::fuzz::fail("split and whole reads decoded a whole response differently");
  }
  return 0;
}
