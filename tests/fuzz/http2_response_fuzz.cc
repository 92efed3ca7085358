// libFuzzer target: the upstream HTTP/2 codec (proxy/http/http2/client_codec.h) reading
// arbitrary owner bytes in arbitrary reads (tests/fuzz/fuzz_input.h), then the connection
// closing. Three streams are open when the bytes arrive (ids 1, 3, 5): a GET, a HEAD, and a
// POST still sending its body; an owner preface is not put in front (a missing or broken one
// is part of what is fuzzed). Checks, besides the sanitizers: no response event after a
// stream's end or reset, at most one reset per stream, every stream ends or is reset once the
// connection closed, and split reads decode the same as one read.

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
    events += "reset " + std::to_string(static_cast<int>(reason)) + ";";
    over = true;
  }
  void onRequestSent() override {}
  void onAboveWriteHighWatermark() override {}
  void onBelowWriteLowWatermark() override {}
  void check() const {
    if (over) fuzz::fail("a stream event after the stream's end or reset");
  }
};

struct NoConnectionEvents : public ClientConnectionCallbacks {
  void onGoAway(int32_t, uint32_t) override {}
  void onRemoteSettings() override {}
  void onPingAck() override {}
};

std::string run(fuzz::SplitInput input, bool split) {
  Buffer output;
  NoConnectionEvents connection;
  ClientCodec codec(output, connection, Http2ClientSettings{}, "https");
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
  std::string out = ok ? "ok|" : "failed|";
  for (auto& s : streams) {
    if (!s.over) fuzz::fail("a stream neither ended nor reset after the connection closed");
    out += s.events + "|";
  }
  return out;
}

}  // namespace
}  // namespace ferry::http::http2

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ferry::http::http2::run;
  const std::string split = run(ferry::fuzz::SplitInput(data, size), true);
  const std::string whole = run(ferry::fuzz::SplitInput(data, size), false);
  if (split != whole) {
    std::fprintf(stderr, "split reads: %s\none read: %s\n", split.c_str(), whole.c_str());
    ferry::fuzz::fail("split and whole reads decoded different responses");
  }
  return 0;
}
