// Random interleavings of what a client and the core do, under the sanitizers: the stream
// lifetime rules hold whatever the order (no call into a stream the core is done with, no
// stream left behind, the connection never breaks framing).

#include <gtest/gtest.h>

#include <random>

#include "h2_test_client.h"
#include "proxy/http/http2/server_codec.h"

namespace ferry::http::http2::testing {
namespace {

// Wraps FakeStream to catch calls after the core let go of the stream.
struct CheckedStream : public FakeStream {
  bool done = false;  // the test ended or reset the response, or heard onStreamReset
  bool head_sent = false;
  int calls_after_done = 0;
  int disabled = 0;

  void onRequestHeaders(RequestHeadersPtr h, bool end_stream) override {
    if (done) ++calls_after_done;
    FakeStream::onRequestHeaders(std::move(h), end_stream);
  }
  void onRequestData(Buffer& data, bool end_stream) override {
    if (done) ++calls_after_done;
    FakeStream::onRequestData(data, end_stream);
  }
  void onStreamReset(StreamResetReason reason) override {
    if (done) ++calls_after_done;
    done = true;
    FakeStream::onStreamReset(reason);
  }
  void onAboveWriteBufferHighWatermark() override {
    if (done) ++calls_after_done;
    FakeStream::onAboveWriteBufferHighWatermark();
  }
  void onBelowWriteBufferLowWatermark() override {
    if (done) ++calls_after_done;
    FakeStream::onBelowWriteBufferLowWatermark();
  }
};

class CheckedCallbacks : public ServerConnectionCallbacks {
 public:
  RequestDecoder& onNewRequest(ResponseEncoder& encoder) override {
    streams.push_back(std::make_unique<CheckedStream>());
    CheckedStream& s = *streams.back();
    s.encoder = &encoder;
    encoder.setStreamCallbacks(s);
    return s;
  }
  // HTTP/1.1 only: an HTTP/2 codec never calls it.
  void readDisableConnection(bool) override { ADD_FAILURE() << "readDisableConnection on HTTP/2"; }
  std::vector<std::unique_ptr<CheckedStream>> streams;
};

class Http2Chaos : public ::testing::TestWithParam<int> {};

TEST_P(Http2Chaos, LifetimeRulesHold) {
  std::mt19937 rng(GetParam());
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  Http2Settings settings;
  settings.initial_stream_window = 16384;
  settings.stream_write_high_watermark = 20000;
  settings.max_concurrent_streams = 20;
  Buffer output;
  CheckedCallbacks callbacks;
  auto codec = createServerCodec(output, callbacks, settings);
  H2Client client({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(pick(3) * 30000)}});
  std::vector<int32_t> ids;
  bool paused = false;
  bool ok = true;

  for (int step = 0; step < 400 && ok; ++step) {
    switch (pick(10)) {
      case 0:
      case 1: {  // a request, with or without a body
        std::string body(pick(3) * 20000, 'b');
        ids.push_back(client.request({{":method", body.empty() ? "GET" : "POST"},
                                      {":scheme", "https"},
                                      {":authority", "e.com"},
                                      {":path", "/" + std::to_string(step)}},
                                     body.empty() ? nullptr : &body));
        break;
      }
      case 2: {  // the client resets one of its streams (one it has sent: not an idle one)
        if (ids.empty()) break;
        const int32_t id = ids[pick(ids.size())];
        if (nghttp2_session_find_stream(client.session(), id) != nullptr) client.reset(id);
        break;
      }
      case 3:  // the client returns credit
        if (!ids.empty()) {
          nghttp2_submit_window_update(client.session(), NGHTTP2_FLAG_NONE, ids[pick(ids.size())],
                                       30000);
        }
        break;
      case 4:
        paused = !paused;
        paused ? codec->onAboveWriteBufferHighWatermark() : codec->onBelowWriteBufferLowWatermark();
        break;
      default: {  // the core does something on a live stream
        if (callbacks.streams.empty()) break;
        CheckedStream& s = *callbacks.streams[pick(callbacks.streams.size())];
        if (s.done) break;
        ResponseEncoder& e = *s.encoder;
        switch (pick(6)) {
          case 0: {
            if (s.head_sent) break;
            s.head_sent = true;
            ResponseHeaders head;
            head.status = pick(2) ? 200 : 204;
            const bool end = pick(4) == 0;
            e.encodeHeaders(head, end);
            if (end) s.done = true;
            break;
          }
          case 1:
          case 2: {
            if (!s.head_sent) break;
            Buffer data;
            data.add(std::string(pick(40000), 'r'));
            const bool end = pick(3) == 0;
            e.encodeData(data, end);
            if (end) s.done = true;
            break;
          }
          case 3:
            e.resetStream();
            s.done = true;
            break;
          case 4:
            if (s.disabled > 0 && pick(2)) {
              --s.disabled;
              e.readDisable(false);
            } else {
              ++s.disabled;
              e.readDisable(true);
            }
            break;
          default:
            break;
        }
      }
    }
    // Move bytes, sometimes only part of the way.
    std::string out = client.takeOutput();
    if (!out.empty()) {
      Buffer in;
      in.add(out);
      ok = codec->dispatch(in);
    }
    if (pick(2) == 0 && !output.empty()) ok = client.receive(output) && ok;
  }
  EXPECT_TRUE(ok) << codec->error().detail;

  // Wind down: the core ends every stream, the output drains, the client reads everything.
  codec->onBelowWriteBufferLowWatermark();
  for (auto& s : callbacks.streams) {
    while (s->disabled > 0 && !s->done) {
      --s->disabled;
      s->encoder->readDisable(false);
    }
  }
  for (int round = 0; round < 50; ++round) {
    for (auto& s : callbacks.streams) {
      if (s->done) continue;
      s->done = true;
      s->encoder->resetStream();
    }
    for (int32_t id : ids) {
      nghttp2_submit_window_update(client.session(), NGHTTP2_FLAG_NONE, id, 1 << 20);
    }
    std::string out = client.takeOutput();
    Buffer in;
    in.add(out);
    codec->dispatch(in);
    client.receive(output);
  }
  for (auto& s : callbacks.streams) EXPECT_EQ(s->calls_after_done, 0);
  EXPECT_EQ(static_cast<Http2ServerCodec&>(*codec).liveStreams(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, Http2Chaos, ::testing::Range(1, 41));

}  // namespace
}  // namespace ferry::http::http2::testing
