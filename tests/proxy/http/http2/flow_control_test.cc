// Per-stream flow control tied to the core's backpressure, and the response side's watermarks.

#include <event2/buffer.h>
#include <gtest/gtest.h>

#include "h2_test_client.h"

namespace ferry::http::http2::testing {
namespace {

int32_t post(H2Client& client, const std::string& body) {
  return client.request({{":method", "POST"},
                         {":scheme", "https"},
                         {":authority", "example.com"},
                         {":path", "/append"}},
                        &body);
}

size_t dataFrames(const std::string& bytes) {
  size_t n = 0;
  for (const RawFrame& f : parseFrames(bytes)) n += f.type == NGHTTP2_DATA;
  return n;
}

TEST(Http2FlowControl, ReadDisabledStreamStopsGettingCreditOthersGoOn) {
  Http2Settings settings;
  settings.initial_stream_window = 16384;
  Conversation c(settings);
  ASSERT_TRUE(c.exchange());  // SETTINGS both ways: the 16 KiB stream window is in force
  c.callbacks.on_new_stream = [](FakeStream& s) {
    s.on_data = [](FakeStream& s) {
      if (s.data_calls == 1 && s.headers->path == "/append") s.encoder->readDisable(true);
    };
  };
  const std::string body(100000, 'a');
  int32_t slow = post(c.client, body);
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  FakeStream& stalled = *c.callbacks.streams[0];
  // The stream's window is spent and not returned: the client stops at 16 KiB.
  EXPECT_LE(stalled.body.size(), 16384u);
  EXPECT_FALSE(stalled.ended);

  // Another stream on the same connection still gets all of its body.
  c.callbacks.on_new_stream = nullptr;
  c.client.request({{":method", "PUT"},
                    {":scheme", "https"},
                    {":authority", "example.com"},
                    {":path", "/other"}},
                   &body);
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 2u);
  EXPECT_EQ(c.callbacks.streams[1]->body.size(), body.size());
  EXPECT_TRUE(c.callbacks.streams[1]->ended);
  EXPECT_LE(stalled.body.size(), 16384u);

  // Re-enabled: the held credit goes back and the rest arrives.
  stalled.encoder->readDisable(false);
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(stalled.body, body);
  EXPECT_TRUE(stalled.ended);
  (void)slow;
}

TEST(Http2FlowControl, ReadDisableNests) {
  Http2Settings settings;
  settings.initial_stream_window = 16384;
  Conversation c(settings);
  ASSERT_TRUE(c.exchange());
  c.callbacks.on_new_stream = [](FakeStream& s) {
    s.on_data = [](FakeStream& s) {
      if (s.data_calls == 1) {
        s.encoder->readDisable(true);
        s.encoder->readDisable(true);
      }
    };
  };
  const std::string body(50000, 'b');
  post(c.client, body);
  ASSERT_TRUE(c.exchange());
  FakeStream& s = *c.callbacks.streams[0];
  const size_t before = s.body.size();
  s.encoder->readDisable(false);
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(s.body.size(), before);  // still disabled once
  s.encoder->readDisable(false);
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(s.body, body);
}

TEST(Http2FlowControl, StalledReaderRaisesWatermarksPerStream) {
  Http2Settings settings;
  settings.stream_write_high_watermark = 1000;
  // A client that gives no stream any credit: a zero-window slow reader (RFC 9113 §6.9.2).
  Conversation c(settings, {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}});
  int32_t a = c.client.get("/a");
  int32_t b = c.client.get("/b");
  ASSERT_TRUE(c.exchange());
  ASSERT_EQ(c.callbacks.streams.size(), 2u);
  FakeStream& sa = *c.callbacks.streams[0];
  FakeStream& sb = *c.callbacks.streams[1];
  for (FakeStream* s : {&sa, &sb}) {
    ResponseHeaders head;
    s->encoder->encodeHeaders(head, false);
    Buffer body;
    body.add(std::string(3000, 'x'));
    s->encoder->encodeData(body, false);
  }
  EXPECT_EQ(sa.above_high, 1);
  EXPECT_EQ(sb.above_high, 1);
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(c.client.stream(a).body.size(), 0u);

  // The client opens stream b's window only: b drains below its low watermark, a stays put.
  nghttp2_submit_window_update(c.client.session(), NGHTTP2_FLAG_NONE, b, 5000);
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(c.client.stream(b).body.size(), 3000u);
  EXPECT_EQ(sb.below_low, 1);
  EXPECT_EQ(sa.below_low, 0);
  EXPECT_EQ(c.client.stream(a).body.size(), 0u);

  Buffer more;
  more.add("end");
  sb.encoder->encodeData(more, true);
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.client.stream(b).ended);
  EXPECT_FALSE(c.client.stream(a).ended);
}

TEST(Http2FlowControl, ConnectionWatermarkHoldsDataFrames) {
  Conversation c;
  int32_t id = c.client.get("/");
  ASSERT_TRUE(c.exchange());
  FakeStream& s = *c.callbacks.streams[0];
  c.codec->onAboveWriteBufferHighWatermark();
  ResponseHeaders head;
  s.encoder->encodeHeaders(head, false);
  Buffer body;
  body.add("payload");
  s.encoder->encodeData(body, true);
  EXPECT_EQ(dataFrames(c.output.toString()), 0u);
  c.codec->onBelowWriteBufferLowWatermark();
  EXPECT_EQ(dataFrames(c.output.toString()), 1u);
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(c.client.stream(id).body, "payload");
  EXPECT_TRUE(c.client.stream(id).ended);
}

struct PauseAt {
  ServerCodec* codec;
  size_t limit;
  bool paused = false;
};

// An evbuffer callback, as a connection's output watermark would be: it fires from inside the
// codec's own writes.
void onOutputChange(evbuffer* buffer, const evbuffer_cb_info*, void* arg) {
  auto* pause = static_cast<PauseAt*>(arg);
  if (!pause->paused && evbuffer_get_length(buffer) > pause->limit) {
    pause->paused = true;
    pause->codec->onAboveWriteBufferHighWatermark();
  }
}

TEST(Http2FlowControl, PausedFromInsideTheWritesStopsAtTheNextDataFrame) {
  Conversation c({}, {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}});
  nghttp2_session_set_local_window_size(c.client.session(), NGHTTP2_FLAG_NONE, 0, 1 << 20);
  int32_t id = c.client.get("/");
  ASSERT_TRUE(c.exchange());
  FakeStream& s = *c.callbacks.streams[0];
  ResponseHeaders head;
  s.encoder->encodeHeaders(head, false);
  ASSERT_TRUE(c.exchange());
  PauseAt pause{c.codec.get(), 20000};
  evbuffer_cb_entry* cb = evbuffer_add_cb(c.output.raw(), onOutputChange, &pause);
  Buffer body;
  body.add(std::string(200000, 'p'));
  s.encoder->encodeData(body, true);
  EXPECT_TRUE(pause.paused);
  // One more 16 KiB frame at most after the watermark was crossed.
  EXPECT_LT(c.output.length(), 20000u + 16384u + 9u + 1u);
  evbuffer_remove_cb_entry(c.output.raw(), cb);
  c.deliver();
  EXPECT_LT(c.client.stream(id).body.size(), 40000u);
  c.codec->onBelowWriteBufferLowWatermark();
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(c.client.stream(id).body.size(), 200000u);
  EXPECT_TRUE(c.client.stream(id).ended);
}

}  // namespace
}  // namespace ferry::http::http2::testing
