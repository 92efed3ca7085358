// libFuzzer target: the downstream HTTP/2 codec (proxy/http/http2) fed arbitrary frames in
// arbitrary reads (tests/fuzz/fuzz_input.h). Inputs that do not start with the client
// preface get one put in front (with an empty SETTINGS), so mutations reach the frame layer
// instead of dying at the preface check. Every request is answered as soon as it ends (a head
// and a body), so the response path and flow control run too. Besides the sanitizers, it
// checks what the codec promises its connection (proxy/http/codec.h):
//  - no request event after a request's end;
//  - a connection error is answered by the codec itself (CodecError::http_status 0).
// Split and whole reads are both run but not compared: a flood limit (unanswered PING ACKs)
// legitimately trips when the frames come in one read and not when the client reads between.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/http/http2/codec_factory.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/proxy/http/http1/test_fakes.h"

namespace ferry::http::http2 {
namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
constexpr char kEmptySettings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0};

struct Outcome {
  bool ok = true;
};

Outcome run(fuzz::SplitInput input, bool split) {
  Buffer output;
  Buffer pending;
  http1::FakeServerCallbacks callbacks;
  callbacks.on_end = http1::answerOk;
  Http2Settings settings;
  // Small, so the limits are in reach of small inputs.
  settings.max_request_header_bytes = 2048;
  settings.max_request_headers = 16;
  settings.max_concurrent_streams = 8;
  settings.initial_stream_window = 16 * 1024;
  auto codec = createServerCodec(output, callbacks, settings);
  if (input.data().substr(0, kPreface.size()) != kPreface) {
    pending.add(kPreface);
    pending.add(kEmptySettings, sizeof(kEmptySettings));
  }
  Outcome out;
  while (out.ok && !input.done()) {
    if (split) {
      pending.add(input.next());
    } else {
      pending.add(input.data());
      while (!input.done()) input.next();
    }
    out.ok = codec->dispatch(pending);
    output.clear();  // the client "reads" everything
    codec->onBelowWriteBufferLowWatermark();
  }
  if (!out.ok && codec->error().http_status != 0) {
    fuzz::fail("HTTP/2 connection error without the codec's own GOAWAY (http_status != 0)");
  }
  for (const auto& r : callbacks.requests) {
    if (r->data_after_end) fuzz::fail("request data after the request's end");
  }
  return out;
}

}  // namespace
}  // namespace ferry::http::http2

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferry::http::http2;
  run(ferry::fuzz::SplitInput(data, size), true);
  run(ferry::fuzz::SplitInput(data, size), false);
  return 0;
}
