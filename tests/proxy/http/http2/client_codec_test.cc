// The upstream HTTP/2 codec (proxy/http/http2/client_codec.h) seen from both sides: the pool's
// stream that encodes requests and decodes responses, and an owner. The owner is either ferry's
// own server codec (request conversion and bodies, as ferry-to-ferry runs) or the test itself
// writing raw frames (every failure rule, flow control per stream, one byte at a time).

#include "proxy/http/http2/client_codec.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/http/http2/codec_factory.h"
#include "tests/proxy/http/http2/h2_test_client.h"

namespace ferry::http::http2 {
namespace {

using testing::frame;
using testing::literal;
using testing::parseFrames;
using testing::RawFrame;

std::string u32(uint32_t v) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  return out;
}

std::string headersFrame(int32_t id, const std::string& block, bool end_stream) {
  return frame(NGHTTP2_HEADERS,
               NGHTTP2_FLAG_END_HEADERS | (end_stream ? NGHTTP2_FLAG_END_STREAM : 0), id, block);
}
std::string dataFrame(int32_t id, const std::string& data, bool end_stream) {
  return frame(NGHTTP2_DATA, end_stream ? NGHTTP2_FLAG_END_STREAM : 0, id, data);
}
std::string rstFrame(int32_t id, uint32_t code) {
  return frame(NGHTTP2_RST_STREAM, 0, id, u32(code));
}
std::string goawayFrame(int32_t last, uint32_t code) {
  return frame(NGHTTP2_GOAWAY, 0, 0, u32(static_cast<uint32_t>(last)) + u32(code));
}
// The owner's SETTINGS, and its ACK of ours (which puts our window settings in force).
std::string serverPreface() {
  return frame(NGHTTP2_SETTINGS, 0, 0, "") + frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "");
}

// The pool's stream, as Http2PoolStream is: records what the codec tells it.
struct FakeUser : public ResponseDecoder, public ClientStreamCallbacks {
  std::vector<int> informational;
  int status = 0;
  bool head_end = false;
  std::string body;
  int data_calls = 0;
  bool ended = false;
  std::vector<ClientResetReason> resets;
  int sent = 0;
  int above = 0;
  int below = 0;
  std::function<void()> on_head;

  void onInformational(ResponseHeadersPtr headers) override {
    informational.push_back(headers->status);
  }
  void onResponseHeaders(ResponseHeadersPtr headers, bool end_stream) override {
    status = headers->status;
    head_end = end_stream;
    ended = end_stream;
    if (on_head) on_head();
  }
  void onResponseData(Buffer& data, bool end_stream) override {
    ++data_calls;
    body += data.toString();
    data.drain(data.length());
    if (end_stream) ended = true;
  }
  void onStreamReset(ClientResetReason reason, uint32_t) override { resets.push_back(reason); }
  void onRequestSent() override { ++sent; }
  void onAboveWriteBufferHighWatermark() override { ++above; }
  void onBelowWriteBufferLowWatermark() override { ++below; }
};

struct FakeConnection : public ClientConnectionCallbacks {
  std::vector<int32_t> goaways;
  int settings = 0;
  int ping_acks = 0;
  void onGoAway(int32_t last, uint32_t) override { goaways.push_back(last); }
  void onRemoteSettings() override { ++settings; }
  void onPingAck() override { ++ping_acks; }
};

RequestHeaders get(const std::string& path) {
  RequestHeaders head;
  head.method = "GET";
  head.path = path;
  head.authority = "owner.test";
  return head;
}

// ---- The test as the owner, with raw frames.

class ClientCodecRawTest : public ::testing::Test {
 protected:
  explicit ClientCodecRawTest(Http2ClientSettings settings = {})
      : codec_(std::make_unique<Http2ClientCodec>(output_, connection_, settings, "https")) {
    written();  // the preface
    EXPECT_TRUE(feed(serverPreface()));
  }

  // Opens a stream and sends a GET on it; returns its id.
  int32_t open(FakeUser& user, const std::string& path = "/v1/stream/a") {
    ClientStream& stream = codec_->newStream(user, user);
    stream.encodeHeaders(get(path), true);
    streams_.push_back(&stream);
    return stream.id();
  }
  bool feed(const std::string& bytes) {
    Buffer in;
    in.add(bytes);
    return codec_->dispatch(in);
  }
  bool feedByteAtATime(const std::string& bytes) {
    for (char c : bytes) {
      if (!feed(std::string(1, c))) return false;
    }
    return true;
  }
  // The frames the codec wrote since the last call.
  std::vector<RawFrame> written() {
    std::vector<RawFrame> frames = parseFrames(skipMagic(output_.toString()));
    output_.drain(output_.length());
    return frames;
  }
  static std::string skipMagic(std::string bytes) {
    static const std::string kMagic = NGHTTP2_CLIENT_MAGIC;
    if (bytes.compare(0, kMagic.size(), kMagic) == 0) bytes.erase(0, kMagic.size());
    return bytes;
  }
  static uint32_t windowUpdates(const std::vector<RawFrame>& frames, int32_t stream_id) {
    uint32_t sum = 0;
    for (const auto& f : frames) {
      if (f.type != NGHTTP2_WINDOW_UPDATE || f.stream_id != stream_id) continue;
      const auto* p = reinterpret_cast<const unsigned char*>(f.payload.data());
      sum += (uint32_t(p[0] & 0x7f) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
    }
    return sum;
  }

  Buffer output_;
  FakeConnection connection_;
  std::unique_ptr<Http2ClientCodec> codec_;
  std::vector<ClientStream*> streams_;
};

const std::string kOk = literal(":status", "200") + literal("content-type", "text/plain");

TEST_F(ClientCodecRawTest, ResponseHeadDataAndEndAreDecoded) {
  FakeUser user;
  const int32_t id = open(user);
  EXPECT_EQ(id, 1);
  EXPECT_EQ(user.sent, 1);  // END_STREAM on the HEADERS went out
  EXPECT_TRUE(streams_[0]->headersSent());
  EXPECT_GT(streams_[0]->bytesSent(), 9u);
  ASSERT_TRUE(feed(headersFrame(id, kOk, false) + dataFrame(id, "hello", true)));
  EXPECT_EQ(user.status, 200);
  EXPECT_FALSE(user.head_end);
  EXPECT_EQ(user.body, "hello");
  EXPECT_TRUE(user.ended);
  EXPECT_TRUE(user.resets.empty());
  streams_[0]->detach();
  EXPECT_EQ(codec_->liveStreams(), 0u);
}

TEST_F(ClientCodecRawTest, ResponseFedOneByteAtATime) {
  FakeUser user;
  const int32_t id = open(user);
  ASSERT_TRUE(feedByteAtATime(headersFrame(id, kOk, false) + dataFrame(id, "abc", false) +
                              dataFrame(id, "def", true)));
  EXPECT_EQ(user.status, 200);
  EXPECT_EQ(user.body, "abcdef");
  EXPECT_TRUE(user.ended);
}

TEST_F(ClientCodecRawTest, InformationalThenFinalAndTrailersEndTheBody) {
  FakeUser user;
  const int32_t id = open(user);
  ASSERT_TRUE(feed(headersFrame(id, literal(":status", "103") + literal("link", "</a>"), false) +
                   headersFrame(id, kOk, false) + dataFrame(id, "x", false) +
                   headersFrame(id, literal("grpc-status", "0"), true)));
  EXPECT_EQ(user.informational, std::vector<int>{103});
  EXPECT_EQ(user.status, 200);
  EXPECT_EQ(user.body, "x");
  EXPECT_TRUE(user.ended);
  EXPECT_TRUE(user.resets.empty());
}

TEST_F(ClientCodecRawTest, RefusedStreamIsRefused) {
  FakeUser user;
  const int32_t id = open(user);
  ASSERT_TRUE(feed(rstFrame(id, NGHTTP2_REFUSED_STREAM)));
  EXPECT_EQ(user.resets, std::vector<ClientResetReason>{ClientResetReason::Refused});
  EXPECT_EQ(codec_->liveStreams(), 0u);
}

TEST_F(ClientCodecRawTest, OtherResetIsRemoteReset) {
  FakeUser user;
  const int32_t id = open(user);
  ASSERT_TRUE(feed(headersFrame(id, kOk, false) + rstFrame(id, NGHTTP2_INTERNAL_ERROR)));
  EXPECT_EQ(user.status, 200);
  EXPECT_EQ(user.resets, std::vector<ClientResetReason>{ClientResetReason::RemoteReset});
}

// RFC 9113 §6.8: streams at or below last-stream-id go on; those above were never processed.
TEST_F(ClientCodecRawTest, GoAwayRefusesOnlyTheStreamsAboveItsLastId) {
  FakeUser first;
  FakeUser second;
  const int32_t a = open(first);
  const int32_t b = open(second);
  ASSERT_TRUE(feed(goawayFrame(a, NGHTTP2_NO_ERROR)));
  EXPECT_EQ(connection_.goaways, std::vector<int32_t>{a});
  EXPECT_TRUE(codec_->goAwayReceived());
  EXPECT_EQ(second.resets, std::vector<ClientResetReason>{ClientResetReason::GoAwayRefused});
  EXPECT_TRUE(first.resets.empty());
  // The first finishes on the draining connection.
  ASSERT_TRUE(feed(headersFrame(a, kOk, false) + dataFrame(a, "event", true)));
  EXPECT_EQ(first.body, "event");
  EXPECT_TRUE(first.ended);
  // No new stream starts after it.
  FakeUser third;
  ClientStream& late = codec_->newStream(third, third);
  late.encodeHeaders(get("/late"), true);
  EXPECT_EQ(third.resets, std::vector<ClientResetReason>{ClientResetReason::NotSent});
  (void)b;
}

TEST_F(ClientCodecRawTest, MalformedResponsesResetTheStreamAsProtocolError) {
  FakeUser upgrade;
  FakeUser no_status;
  const int32_t a = open(upgrade);
  const int32_t b = open(no_status);
  // §8.6: 101 is not used in HTTP/2; a response head without :status is malformed (§8.3.2).
  ASSERT_TRUE(feed(headersFrame(a, literal(":status", "101"), false) +
                   headersFrame(b, literal("content-type", "text/plain"), false)));
  EXPECT_EQ(upgrade.resets, std::vector<ClientResetReason>{ClientResetReason::ProtocolError});
  EXPECT_EQ(no_status.resets, std::vector<ClientResetReason>{ClientResetReason::ProtocolError});
  EXPECT_EQ(upgrade.status, 0);
  bool reset_a = false;
  for (const auto& f : written())
    reset_a = reset_a || (f.type == NGHTTP2_RST_STREAM && f.stream_id == a);
  EXPECT_TRUE(reset_a);
}

TEST_F(ClientCodecRawTest, ClosedConnectionLosesOpenStreamsOnly) {
  FakeUser sent;
  FakeUser unsent;
  FakeUser done;
  open(sent);
  codec_->newStream(unsent, unsent);  // its head never encoded
  const int32_t c = open(done);
  ASSERT_TRUE(feed(headersFrame(c, kOk, true)));
  EXPECT_TRUE(done.ended);
  codec_->onConnectionClosed();
  EXPECT_EQ(sent.resets, std::vector<ClientResetReason>{ClientResetReason::ConnectionLost});
  EXPECT_EQ(unsent.resets, std::vector<ClientResetReason>{ClientResetReason::NotSent});
  EXPECT_TRUE(done.resets.empty());
}

TEST_F(ClientCodecRawTest, DetachCancelsAndSilencesTheStream) {
  FakeUser user;
  const int32_t id = open(user);
  written();
  streams_[0]->detach();
  bool cancel = false;
  for (const auto& f : written()) {
    cancel = cancel || (f.type == NGHTTP2_RST_STREAM && f.stream_id == id &&
                        f.payload == u32(NGHTTP2_CANCEL));
  }
  EXPECT_TRUE(cancel);
  ASSERT_TRUE(feed(headersFrame(id, kOk, true)));
  EXPECT_EQ(user.status, 0);
  EXPECT_TRUE(user.resets.empty());
}

TEST_F(ClientCodecRawTest, PingIsSentAndItsAckReported) {
  codec_->sendPing();
  std::string opaque;
  for (const auto& f : written()) {
    if (f.type == NGHTTP2_PING && f.flags == 0) opaque = f.payload;
  }
  ASSERT_EQ(opaque.size(), 8u);
  ASSERT_TRUE(feed(frame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, opaque)));
  EXPECT_EQ(connection_.ping_acks, 1);
}

TEST_F(ClientCodecRawTest, OwnerSettingsCapConcurrentStreams) {
  EXPECT_EQ(connection_.settings, 1);
  ASSERT_TRUE(feed(frame(NGHTTP2_SETTINGS, 0, 0,
                         std::string("\x00\x03", 2) + u32(7))));  // MAX_CONCURRENT_STREAMS
  EXPECT_EQ(codec_->remoteMaxConcurrentStreams(), 7u);
  EXPECT_EQ(connection_.settings, 2);
}

TEST_F(ClientCodecRawTest, ConnectionErrorFailsDispatchAndLosesStreams) {
  FakeUser user;
  open(user);
  // A DATA frame on stream 0 is a connection error (§6.1).
  EXPECT_FALSE(feed(dataFrame(0, "x", false)));
  EXPECT_TRUE(codec_->failed());
  EXPECT_EQ(user.resets, std::vector<ClientResetReason>{ClientResetReason::ConnectionLost});
  bool goaway = false;
  for (const auto& f : written()) goaway = goaway || f.type == NGHTTP2_GOAWAY;
  EXPECT_TRUE(goaway);
}

// ---- Flow control: a slow subscriber slows only its own stream.

class ClientCodecFlowTest : public ClientCodecRawTest {
 protected:
  static Http2ClientSettings small() {
    Http2ClientSettings s;
    s.initial_stream_window = 16384;
    s.connection_window = 65535;
    return s;
  }
  ClientCodecFlowTest() : ClientCodecRawTest(small()) {}
};

TEST_F(ClientCodecFlowTest, ReadDisabledStreamHoldsItsCreditOthersAndTheConnectionGetTheirs) {
  FakeUser slow;
  FakeUser fast;
  const int32_t a = open(slow);
  const int32_t b = open(fast);
  streams_[0]->readDisable(true);
  written();
  const std::string chunk(12000, 'x');
  ASSERT_TRUE(feed(headersFrame(a, kOk, false) + headersFrame(b, kOk, false) +
                   dataFrame(a, chunk, false) + dataFrame(b, chunk, false)));
  // Both got their bytes (what is in flight is delivered); only the fast one's credit is back.
  EXPECT_EQ(slow.body.size(), chunk.size());
  EXPECT_EQ(fast.body.size(), chunk.size());
  auto frames = written();
  EXPECT_EQ(windowUpdates(frames, a), 0u);
  EXPECT_EQ(windowUpdates(frames, b), chunk.size());
  // The connection's credit comes back whatever the slow stream does.
  ASSERT_TRUE(feed(dataFrame(b, chunk, false)));
  frames = written();
  EXPECT_GE(windowUpdates(frames, 0), 3 * chunk.size());
  EXPECT_EQ(windowUpdates(frames, a), 0u);
  // The slow client catches up: its stream's credit goes back.
  streams_[0]->readDisable(false);
  EXPECT_EQ(windowUpdates(written(), a), chunk.size());
}

// ---- ferry's own server codec as the owner.

class ClientCodecFerryOwnerTest : public ::testing::Test {
 protected:
  ClientCodecFerryOwnerTest()
      : client_(client_out_, connection_, Http2ClientSettings{}, "https"),
        server_(createServerCodec(server_out_, server_callbacks_, Http2Settings{})) {}

  void exchange() {
    for (int round = 0; round < 100; ++round) {
      if (client_out_.empty() && server_out_.empty()) return;
      if (!client_out_.empty()) ASSERT_TRUE(server_->dispatch(client_out_));
      if (!server_out_.empty()) ASSERT_TRUE(client_.dispatch(server_out_));
    }
  }

  Buffer client_out_;
  Buffer server_out_;
  FakeConnection connection_;
  Http2ClientCodec client_;
  testing::FakeServerCallbacks server_callbacks_;
  std::unique_ptr<ServerCodec> server_;
};

TEST_F(ClientCodecFerryOwnerTest, RequestHeadIsConvertedAndConnectionFieldsDropped) {
  FakeUser user;
  RequestHeaders head = get("/v1/streams/x/events?offset=3");
  head.method = "POST";
  head.headers.add("Host", "owner.example:8443");
  head.headers.add("Connection", "keep-alive, x-hop");
  head.headers.add("Keep-Alive", "timeout=5");
  head.headers.add("X-Hop", "1");
  head.headers.add("Transfer-Encoding", "chunked");
  head.headers.add("TE", "trailers");
  head.headers.add("Streams-Forwarded-By", "inst-1");
  head.headers.add("Content-Type", "application/json");
  ClientStream& stream = client_.newStream(user, user);
  stream.encodeHeaders(head, false);
  Buffer body;
  body.add("{\"a\":");
  stream.encodeData(body, false);
  exchange();
  body.add("1}");
  stream.encodeData(body, true);
  exchange();
  ASSERT_EQ(server_callbacks_.streams.size(), 1u);
  const auto& seen = *server_callbacks_.streams[0];
  ASSERT_NE(seen.headers, nullptr);
  EXPECT_EQ(seen.headers->method, "POST");
  EXPECT_EQ(seen.headers->path, "/v1/streams/x/events?offset=3");
  EXPECT_EQ(seen.headers->authority, "owner.example:8443");
  EXPECT_EQ(seen.headers->headers.get("streams-forwarded-by"), "inst-1");
  EXPECT_EQ(seen.headers->headers.get("content-type"), "application/json");
  EXPECT_FALSE(seen.headers->headers.has("keep-alive"));
  EXPECT_FALSE(seen.headers->headers.has("x-hop"));
  EXPECT_FALSE(seen.headers->headers.has("transfer-encoding"));
  EXPECT_EQ(seen.body, "{\"a\":1}");
  EXPECT_TRUE(seen.ended);
  EXPECT_EQ(user.sent, 1);

  // The owner answers; the response comes back whole.
  ResponseHeaders response;
  response.status = 201;
  response.headers.add("content-type", "application/json");
  seen.encoder->encodeHeaders(response, false);
  Buffer answer;
  answer.add("{\"ok\":true}");
  seen.encoder->encodeData(answer, true);
  exchange();
  EXPECT_EQ(user.status, 201);
  EXPECT_EQ(user.body, "{\"ok\":true}");
  EXPECT_TRUE(user.ended);
}

TEST_F(ClientCodecFerryOwnerTest, ManyStreamsShareTheConnection) {
  std::vector<std::unique_ptr<FakeUser>> users;
  for (int i = 0; i < 20; ++i) {
    users.push_back(std::make_unique<FakeUser>());
    client_.newStream(*users.back(), *users.back())
        .encodeHeaders(get("/s/" + std::to_string(i)), true);
  }
  exchange();
  ASSERT_EQ(server_callbacks_.streams.size(), 20u);
  for (auto& s : server_callbacks_.streams) {
    ResponseHeaders response;
    Buffer body;
    body.add(s->headers->path);
    s->encoder->encodeHeaders(response, false);
    s->encoder->encodeData(body, true);
  }
  exchange();
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(users[i]->body, "/s/" + std::to_string(i));
    EXPECT_TRUE(users[i]->ended);
  }
}

}  // namespace
}  // namespace ferry::http::http2
