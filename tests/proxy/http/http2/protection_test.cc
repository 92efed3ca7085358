// The attacks of issue 12, sent as frames: each ends with bounded work and memory, the
// connection closed with GOAWAY where the client is at fault, and the codec's error naming it.

#include <gtest/gtest.h>

#include "h2_test_client.h"

namespace ferry::http::http2::testing {
namespace {

bool hasGoaway(const std::string& bytes, uint32_t error_code) {
  for (const RawFrame& f : parseFrames(bytes)) {
    if (f.type != NGHTTP2_GOAWAY || f.payload.size() < 8) continue;
    const auto b = [&](int i) { return static_cast<uint8_t>(f.payload[i]); };
    const uint32_t code = (b(4) << 24) | (b(5) << 16) | (b(6) << 8) | b(7);
    if (code == error_code) return true;
  }
  return false;
}

std::string ping(int i) {
  std::string payload(8, '\0');
  payload[7] = static_cast<char>(i);
  return frame(NGHTTP2_PING, 0, 0, payload);
}

// CVE-2023-44487: open a stream, reset it at once, again and again.
TEST(Http2Protection, RapidResetClosesWithEnhanceYourCalm) {
  Conversation c;
  ASSERT_TRUE(c.exchange());
  int rounds = 0;
  for (; rounds < 1000 && c.dispatch_ok; ++rounds) {
    int32_t id = c.client.get("/feed");
    c.send();
    c.client.reset(id);
    c.send();
  }
  EXPECT_FALSE(c.dispatch_ok);
  EXPECT_LE(rounds, 110);  // found after ~100 streams, not nghttp2's 1000-reset bucket
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Flood);
  EXPECT_EQ(c.codec->error().http_status, 0);
  EXPECT_TRUE(c.codec->wantsClose());
  c.deliver();
  ASSERT_FALSE(c.client.goaways().empty());
  EXPECT_EQ(c.client.goaways().back().error_code, static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  // Each stream the core saw was told of its reset.
  for (const auto& s : c.callbacks.streams) {
    EXPECT_EQ(s->resets, std::vector<StreamResetReason>{StreamResetReason::RemoteReset});
  }
}

TEST(Http2Protection, CancellationsOfAnsweredStreamsAreNoFlood) {
  Conversation c;
  c.callbacks.on_new_stream = [](FakeStream& s) {
    ResponseHeaders head;
    s.encoder->encodeHeaders(head, false);  // a live feed: head out, body open
  };
  for (int i = 0; i < 300; ++i) {
    int32_t id = c.client.get("/feed");
    ASSERT_TRUE(c.exchange());
    c.client.reset(id);
    ASSERT_TRUE(c.exchange()) << c.codec->error().detail;
  }
  EXPECT_FALSE(c.codec->wantsClose());
  EXPECT_EQ(c.callbacks.streams.size(), 300u);
}

// Resets of streams already answered are no rapid reset for FloodGuard, but a burst of them
// still meets nghttp2's RST_STREAM token bucket (1000, then 33/s).
TEST(Http2Protection, ResetBurstMeetsNghttp2Bucket) {
  Conversation c;
  c.callbacks.on_new_stream = [](FakeStream& s) {
    ResponseHeaders head;
    s.encoder->encodeHeaders(head, false);
  };
  int rounds = 0;
  for (; rounds < 1500 && c.dispatch_ok; ++rounds) {
    int32_t id = c.client.get("/feed");
    c.exchange();
    c.client.reset(id);
    c.exchange();
  }
  EXPECT_FALSE(c.dispatch_ok);
  EXPECT_GT(rounds, 1000);
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Flood);
  ASSERT_FALSE(c.client.goaways().empty());
  EXPECT_EQ(c.client.goaways().back().error_code, static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR));
}

// CVE-2019-9518: frames with no payload, each costing the receiver a callback.
TEST(Http2Protection, EmptyDataFramesCostTheCoreNothing) {
  Conversation c;
  std::string bytes = preface() + frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                                        literal(":method", "POST") + literal(":scheme", "https") +
                                            literal(":authority", "e.com") + literal(":path", "/"));
  for (int i = 0; i < 1000; ++i) bytes += frame(NGHTTP2_DATA, 0, 1, "");
  bytes += frame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, "last");
  ASSERT_TRUE(c.sendRaw(bytes));
  ASSERT_EQ(c.callbacks.streams.size(), 1u);
  EXPECT_EQ(c.callbacks.streams[0]->data_calls, 1);
  EXPECT_EQ(c.callbacks.streams[0]->body, "last");
  EXPECT_TRUE(c.callbacks.streams[0]->ended);
}

TEST(Http2Protection, PingFloodBounded) {
  Conversation c;
  std::string bytes = preface();
  for (int i = 0; i < 5000; ++i) bytes += ping(i);
  EXPECT_FALSE(c.sendRaw(bytes));
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Flood);
  EXPECT_EQ(c.codec->error().http_status, 0);
  const std::string out = c.output.toString();
  // At most the 1000 ACKs nghttp2 may hold, then the GOAWAY.
  EXPECT_LT(out.size(), 1001u * 17 + 200);
  EXPECT_TRUE(hasGoaway(out, NGHTTP2_ENHANCE_YOUR_CALM));
}

TEST(Http2Protection, PingFloodWhileOutputPausedBounded) {
  Conversation c;
  ASSERT_TRUE(c.exchange());
  c.codec->onAboveWriteBufferHighWatermark();  // a client that does not read
  int chunks = 0;
  for (; chunks < 100 && c.dispatch_ok; ++chunks) {
    std::string bytes;
    for (int i = 0; i < 100; ++i) bytes += ping(i);
    c.sendRaw(bytes);
  }
  EXPECT_FALSE(c.dispatch_ok);
  EXPECT_LE(chunks, 11);
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Flood);
}

// Malformed requests answered with RST_STREAM, by a client that never reads the answers. A
// stream nghttp2 resets stays open until its RST_STREAM is written, so once
// max_concurrent_streams of them wait, the next HEADERS is a connection error and nghttp2
// ignores the rest of the input: what is queued is bounded by the concurrency limit.
TEST(Http2Protection, RefusalFloodWhileNotReadingBounded) {
  Http2Settings settings;
  settings.max_concurrent_streams = 100;
  Conversation c(settings);
  ASSERT_TRUE(c.exchange());
  c.codec->onAboveWriteBufferHighWatermark();
  int32_t id = 1;
  for (int chunk = 0; chunk < 40; ++chunk) {
    std::string bytes;
    for (int i = 0; i < 500; ++i, id += 2) {
      bytes += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, id,
                     getBlock() + literal("connection", "close"));
    }
    c.sendRaw(bytes);
  }
  EXPECT_LE(c.callbacks.refused.size(), 101u);
  EXPECT_TRUE(c.output.empty());
  // The output drains: the queued resets and the GOAWAY go out, and the error shows.
  c.codec->onBelowWriteBufferLowWatermark();
  EXPECT_FALSE(c.sendRaw(ping(1)));
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Protocol);
  EXPECT_TRUE(hasGoaway(c.output.toString(), NGHTTP2_PROTOCOL_ERROR));
  EXPECT_TRUE(c.callbacks.streams.empty());
}

TEST(Http2Protection, SettingsWithTooManyEntriesClosesTheConnection) {
  Conversation c;
  std::string entries;
  for (int i = 0; i < 40; ++i) entries += std::string("\x00\x03\x00\x00\x00\x64", 6);
  EXPECT_FALSE(c.sendRaw(std::string(NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN) +
                         frame(NGHTTP2_SETTINGS, 0, 0, entries)));
  EXPECT_EQ(c.codec->error().http_status, 0);
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Flood);
  EXPECT_TRUE(hasGoaway(c.output.toString(), NGHTTP2_ENHANCE_YOUR_CALM));
}

TEST(Http2Protection, SettingsFloodBounded) {
  Conversation c;
  std::string bytes = preface();
  for (int i = 0; i < 5000; ++i) bytes += frame(NGHTTP2_SETTINGS, 0, 0, "");
  EXPECT_FALSE(c.sendRaw(bytes));
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Flood);
  EXPECT_LT(c.output.length(), 1001u * 9 + 200);
}

// A header block that never ends: CONTINUATION after CONTINUATION.
TEST(Http2Protection, ContinuationFloodClosesTheConnection) {
  Conversation c;
  ASSERT_TRUE(c.sendRaw(preface() + frame(NGHTTP2_HEADERS, 0, 1, getBlock())));
  EXPECT_TRUE(c.codec->requestHeadInProgress());
  int frames = 0;
  for (; frames < 100 && c.dispatch_ok; ++frames) {
    c.sendRaw(frame(NGHTTP2_CONTINUATION, 0, 1, literal("x-c", std::string(100, 'c'))));
  }
  EXPECT_FALSE(c.dispatch_ok);
  EXPECT_LE(frames, 10);
  EXPECT_EQ(c.codec->error().http_status, 0);
  EXPECT_TRUE(c.callbacks.streams.empty());
}

// CONTINUATION frames within nghttp2's count, but a list over the limit: 431 as soon as the
// decoded fields pass it (the 5th 15 KB field passes 60 KiB), nothing kept, and the connection
// ends there (GOAWAY ENHANCE_YOUR_CALM) without waiting for the end of the block.
TEST(Http2Protection, LongContinuationChainOverTheLimitRefused) {
  Conversation c;
  ASSERT_TRUE(
      c.sendRaw(preface() + frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, getBlock())));
  int sent = 0;
  for (; sent < 6 && c.dispatch_ok; ++sent) {
    c.sendRaw(frame(NGHTTP2_CONTINUATION, 0, 1,
                    literal("x-c" + std::to_string(sent), std::string(15000, 'c'))));
  }
  EXPECT_EQ(sent, 5);
  EXPECT_FALSE(c.dispatch_ok);
  EXPECT_TRUE(c.codec->wantsClose());
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Flood);
  EXPECT_FALSE(c.codec->requestHeadInProgress());
  EXPECT_TRUE(c.callbacks.streams.empty());
  ASSERT_EQ(c.callbacks.refused.size(), 1u);
  EXPECT_EQ(c.callbacks.refused[0].kind, CodecErrorKind::HeadTooLarge);
}

TEST(Http2Protection, BadPrefaceIsAConnectionError) {
  Conversation c;
  EXPECT_FALSE(c.sendRaw("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"));
  EXPECT_EQ(c.codec->error().http_status, 0);
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Protocol);
  EXPECT_TRUE(hasGoaway(c.output.toString(), NGHTTP2_PROTOCOL_ERROR));
  EXPECT_TRUE(c.codec->wantsClose());
  Buffer more;
  more.add(preface());
  EXPECT_FALSE(c.codec->dispatch(more));  // stays failed
}

TEST(Http2Protection, RequestHeadInProgressUntilPrefaceAndWhileABlockIsOpen) {
  Conversation c;
  EXPECT_TRUE(c.codec->requestHeadInProgress());  // nothing from the client yet
  ASSERT_TRUE(c.sendRaw(std::string(NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN)));
  EXPECT_TRUE(c.codec->requestHeadInProgress());
  ASSERT_TRUE(c.sendRaw(frame(NGHTTP2_SETTINGS, 0, 0, "")));
  EXPECT_FALSE(c.codec->requestHeadInProgress());
  ASSERT_TRUE(c.sendRaw(frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1,
                              literal(":method", "GET") + literal(":scheme", "https"))));
  EXPECT_TRUE(c.codec->requestHeadInProgress());
  ASSERT_TRUE(c.sendRaw(frame(NGHTTP2_CONTINUATION, NGHTTP2_FLAG_END_HEADERS, 1,
                              literal(":authority", "e.com") + literal(":path", "/"))));
  EXPECT_FALSE(c.codec->requestHeadInProgress());
  EXPECT_EQ(c.callbacks.streams.size(), 1u);
}

TEST(Http2Protection, ProtocolErrorFoundByNghttp2FailsDispatch) {
  Conversation c;
  // DATA on stream 0 is a connection error (RFC 9113 §6.1).
  EXPECT_FALSE(c.sendRaw(preface() + frame(NGHTTP2_DATA, 0, 0, "x")));
  EXPECT_EQ(c.codec->error().http_status, 0);
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Protocol);
  EXPECT_TRUE(hasGoaway(c.output.toString(), NGHTTP2_PROTOCOL_ERROR));
  EXPECT_TRUE(c.codec->wantsClose());
}

// While the output is paused nothing is written, the GOAWAY included: the error shows once the
// output drained.
TEST(Http2Protection, ConnectionErrorWhilePausedReportedOnResume) {
  Conversation c;
  ASSERT_TRUE(c.exchange());
  c.codec->onAboveWriteBufferHighWatermark();
  c.sendRaw(frame(NGHTTP2_DATA, 0, 0, "x"));
  EXPECT_TRUE(c.output.empty());
  c.codec->onBelowWriteBufferLowWatermark();
  EXPECT_TRUE(c.codec->wantsClose());
  EXPECT_EQ(c.codec->error().kind, CodecErrorKind::Http2Protocol);
  EXPECT_TRUE(hasGoaway(c.output.toString(), NGHTTP2_PROTOCOL_ERROR));
  Buffer more;
  more.add(ping(1));
  EXPECT_FALSE(c.codec->dispatch(more));
}

}  // namespace
}  // namespace ferry::http::http2::testing
