// Resets both ways, drain in two GOAWAYs, and what the codec's destruction does (nothing).

#include <gtest/gtest.h>

#include "h2_test_client.h"
#include "proxy/http/http2/server_codec.h"

namespace ferry::http::http2::testing {
namespace {

TEST(Http2StreamLifecycle, ResetStreamResetsOnlyThatStream) {
  Conversation c;
  int32_t a = c.client.get("/a");
  int32_t b = c.client.get("/b");
  ASSERT_TRUE(c.exchange());
  FakeStream& sa = *c.callbacks.streams[0];
  FakeStream& sb = *c.callbacks.streams[1];
  ResponseHeaders head;
  sa.encoder->encodeHeaders(head, false);
  Buffer body;
  body.add("partial");
  sa.encoder->encodeData(body, false);
  sa.encoder->resetStream();  // upstream failed after the head went out
  sb.encoder->encodeHeaders(head, false);
  body.add("complete");
  sb.encoder->encodeData(body, true);
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.client.stream(a).reset);
  EXPECT_EQ(c.client.stream(a).reset_code, static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR));
  EXPECT_FALSE(c.client.stream(b).reset);
  EXPECT_EQ(c.client.stream(b).body, "complete");
  EXPECT_TRUE(c.client.stream(b).ended);
  EXPECT_TRUE(sa.resets.empty());  // no callback for ferry's own reset
  EXPECT_FALSE(c.codec->wantsClose());
}

TEST(Http2StreamLifecycle, ResponseHeadTooLargeToSendResetsTheStream) {
  Conversation c;
  int32_t id = c.client.get("/");
  ASSERT_TRUE(c.exchange());
  ResponseHeaders head;
  head.headers.add("x-huge", std::string(70000, 'h'));  // over nghttp2's 64 KiB block limit
  c.callbacks.streams[0]->encoder->encodeHeaders(head, false);
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.client.stream(id).reset);
  EXPECT_EQ(c.client.stream(id).reset_code, static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR));
  EXPECT_EQ(c.callbacks.streams[0]->resets,
            std::vector<StreamResetReason>{StreamResetReason::LocalReset});
  EXPECT_FALSE(c.codec->wantsClose());
}

TEST(Http2StreamLifecycle, ClientResetTellsTheStream) {
  Conversation c;
  int32_t a = c.client.get("/a");
  int32_t b = c.client.get("/b");
  ASSERT_TRUE(c.exchange());
  c.client.reset(a);
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(c.callbacks.streams[0]->resets,
            std::vector<StreamResetReason>{StreamResetReason::RemoteReset});
  EXPECT_TRUE(c.callbacks.streams[1]->resets.empty());
  // The other stream is answered as usual.
  ResponseHeaders head;
  c.callbacks.streams[1]->encoder->encodeHeaders(head, true);
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.client.stream(b).ended);
}

TEST(Http2StreamLifecycle, NoResetCallbackOnceTheResponseEndWasEncoded) {
  Conversation c;
  int32_t a = c.client.get("/a");
  ASSERT_TRUE(c.exchange());
  ResponseHeaders head;
  c.codec->onAboveWriteBufferHighWatermark();  // the end is encoded but not yet written
  c.callbacks.streams[0]->encoder->encodeHeaders(head, false);
  Buffer body;
  body.add("x");
  c.callbacks.streams[0]->encoder->encodeData(body, true);
  c.client.reset(a);
  ASSERT_TRUE(c.send());
  c.codec->onBelowWriteBufferLowWatermark();
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.callbacks.streams[0]->resets.empty());
}

TEST(Http2StreamLifecycle, CoreCallsAfterTheClientResetAreHarmless) {
  Conversation c;
  int32_t a = c.client.get("/a");
  ASSERT_TRUE(c.exchange());
  c.client.reset(a);
  ASSERT_TRUE(c.exchange());
  // The core may still hold the encoder for a moment; a call reaching it is dropped.
  ASSERT_EQ(c.callbacks.streams[0]->resets.size(), 1u);
  int32_t b = c.client.get("/b");
  ASSERT_TRUE(c.exchange());
  ResponseHeaders head;
  c.callbacks.streams[1]->encoder->encodeHeaders(head, true);
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.client.stream(b).ended);
}

TEST(Http2StreamLifecycle, DrainInTwoGoaways) {
  Conversation c;
  c.client.get("/1");
  ASSERT_TRUE(c.exchange());
  c.codec->shutdownNotice();
  EXPECT_FALSE(c.codec->wantsClose());
  // A stream the client opened before it saw the notice is still taken.
  int32_t s3 = c.client.get("/3");
  ASSERT_TRUE(c.send());
  ASSERT_EQ(c.callbacks.streams.size(), 2u);
  c.codec->goAway();
  EXPECT_TRUE(c.codec->wantsClose());
  c.deliver();
  ASSERT_EQ(c.client.goaways().size(), 2u);
  EXPECT_EQ(c.client.goaways()[0].last_stream_id, 0x7fffffff);
  EXPECT_EQ(c.client.goaways()[1].last_stream_id, s3);
  EXPECT_EQ(c.client.goaways()[1].error_code, static_cast<uint32_t>(NGHTTP2_NO_ERROR));
  // In-flight streams finish.
  ResponseHeaders head;
  c.callbacks.streams[1]->encoder->encodeHeaders(head, true);
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.client.stream(s3).ended);
  // A stream after the final GOAWAY is not taken.
  ASSERT_TRUE(c.sendRaw(
      frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 101, getBlock())));
  EXPECT_EQ(c.callbacks.streams.size(), 2u);
}

TEST(Http2StreamLifecycle, CloseWaitsForAResponseTailHeldByFlowControl) {
  Conversation c({}, {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}});
  int32_t id = c.client.get("/");
  ASSERT_TRUE(c.exchange());
  ResponseHeaders head;
  c.callbacks.streams[0]->encoder->encodeHeaders(head, false);
  Buffer body;
  body.add("tail");
  c.callbacks.streams[0]->encoder->encodeData(body, true);  // the core is done
  c.codec->goAway();
  ASSERT_TRUE(c.exchange());
  EXPECT_FALSE(c.codec->wantsClose());  // "tail" waits for credit
  nghttp2_submit_window_update(c.client.session(), NGHTTP2_FLAG_NONE, id, 100);
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(c.client.stream(id).body, "tail");
  EXPECT_TRUE(c.client.stream(id).ended);
  EXPECT_TRUE(c.codec->wantsClose());
}

TEST(Http2StreamLifecycle, GoAwayRaceRefusesStreamsAboveTheLastId) {
  Conversation c;
  c.client.get("/1");
  ASSERT_TRUE(c.exchange());
  // goAway() from inside a callback, before nghttp2 wrote the GOAWAY: a stream arriving in the
  // same read is refused.
  c.callbacks.on_new_stream = [&](FakeStream& s) {
    if (s.encoder != nullptr) c.codec->goAway();
  };
  int32_t s3 = c.client.get("/3");
  int32_t s5 = c.client.get("/5");
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(c.callbacks.streams.size(), 2u);
  ASSERT_FALSE(c.client.goaways().empty());
  EXPECT_EQ(c.client.goaways().back().last_stream_id, s3);
  EXPECT_TRUE(c.client.stream(s5).reset);
  EXPECT_EQ(c.client.stream(s5).reset_code, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
}

TEST(Http2StreamLifecycle, ClientGoawayMeansClose) {
  Conversation c;
  ASSERT_TRUE(c.exchange());
  nghttp2_submit_goaway(c.client.session(), NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, nullptr, 0);
  ASSERT_TRUE(c.exchange());
  EXPECT_TRUE(c.codec->wantsClose());
}

size_t liveStreams(const Conversation& c) {
  return static_cast<const Http2ServerCodec&>(*c.codec).liveStreams();
}

// Every way a stream ends frees it: a long-lived connection does not accumulate streams.
TEST(Http2StreamLifecycle, StreamsAreFreedWhicheverWayTheyEnd) {
  Conversation c({}, {});
  std::string body(100, 'q');
  for (int i = 0; i < 20; ++i) {
    // Answered, request body and all.
    c.client.request(
        {{":method", "POST"}, {":scheme", "https"}, {":authority", "e.com"}, {":path", "/"}},
        &body);
    // Answered before its body came, then reset by the client.
    int32_t reset = c.client.get("/reset");
    // Reset by ferry.
    c.client.get("/cut");
    // Refused (malformed: reset), and refused with a status (400: a host that is not
    // :authority). A 431 would end the connection (refusal_test).
    c.client.get("/", {{"connection", "close"}});
    c.client.get("/", {{"host", "other.example"}});
    ASSERT_TRUE(c.exchange());
    for (auto& s : c.callbacks.streams) {
      if (!s->resets.empty() || s->encoder == nullptr) continue;
      ResponseEncoder* encoder = s->encoder;
      s->encoder = nullptr;  // the core lets go of it once done
      if (s->headers->path == "/cut") {
        encoder->resetStream();
      } else if (s->headers->path == "/reset") {
        ResponseHeaders head;
        encoder->encodeHeaders(head, false);
        c.client.reset(reset);
      } else {
        ResponseHeaders head;
        encoder->encodeHeaders(head, true);
      }
    }
    ASSERT_TRUE(c.exchange());
  }
  EXPECT_EQ(c.callbacks.streams.size(), 60u);
  EXPECT_EQ(c.callbacks.refused.size(), 40u);
  EXPECT_EQ(liveStreams(c), 0u);
}

TEST(Http2StreamLifecycle, LocalReplyFromInsideTheHeadersCallback) {
  Conversation c;
  c.callbacks.on_new_stream = [](FakeStream& s) {
    s.on_headers = [](FakeStream& s) {
      ResponseHeaders head;
      head.status = 403;
      s.encoder->encodeHeaders(head, true);  // a filter's local reply, mid-dispatch
    };
  };
  std::string body(50000, 'u');
  int32_t id = c.client.request(
      {{":method", "PUT"}, {":scheme", "https"}, {":authority", "e.com"}, {":path", "/"}}, &body);
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(c.client.stream(id).heads.at(0).at(0).second, "403");
  EXPECT_TRUE(c.client.stream(id).ended);
  // The body that kept coming never reached the (finished) core.
  EXPECT_EQ(c.callbacks.streams[0]->data_calls, 0);
  EXPECT_EQ(liveStreams(c), 0u);
  // The connection goes on.
  int32_t next = c.client.get("/next");
  ASSERT_TRUE(c.exchange());
  EXPECT_EQ(c.client.stream(next).heads.at(0).at(0).second, "403");
}

TEST(Http2StreamLifecycle, ServerPrefaceAtOnce) {
  Buffer output;
  FakeServerCallbacks callbacks;
  auto codec = createServerCodec(output, callbacks, Http2Settings{});
  std::vector<RawFrame> frames = parseFrames(output.toString());
  ASSERT_GE(frames.size(), 2u);
  EXPECT_EQ(frames[0].type, NGHTTP2_SETTINGS);
  // SETTINGS_MAX_CONCURRENT_STREAMS (3) = 256 is among the entries.
  EXPECT_NE(frames[0].payload.find(std::string("\x00\x03\x00\x00\x01\x00", 6)), std::string::npos);
  EXPECT_EQ(frames[1].type, NGHTTP2_WINDOW_UPDATE);
}

TEST(Http2StreamLifecycle, SettingsOutOfRangeFailTheConnection) {
  Buffer output;
  FakeServerCallbacks callbacks;
  Http2Settings settings;
  settings.initial_stream_window = 1u << 31;  // over 2^31-1 (RFC 9113 §6.5.2)
  auto codec = createServerCodec(output, callbacks, settings);
  EXPECT_TRUE(codec->wantsClose());
  EXPECT_FALSE(codec->error().detail.empty());
  Buffer in;
  in.add(preface());
  EXPECT_FALSE(codec->dispatch(in));
}

TEST(Http2StreamLifecycle, DestructionCallsNothing) {
  Conversation c;
  c.client.get("/a");
  ASSERT_TRUE(c.exchange());
  c.codec.reset();
  EXPECT_TRUE(c.callbacks.streams[0]->resets.empty());
}

}  // namespace
}  // namespace ferry::http::http2::testing
