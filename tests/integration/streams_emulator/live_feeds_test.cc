// Long-polls and SSE feeds of the emulator.
#include <rapidjson/document.h>

#include <array>

#include "tests/integration/streams_emulator/emulator_fixture.h"

namespace ferry::testing {
namespace {

TEST_F(EmulatorTest, LongPollTimesOutWith204AndHeaders) {
  const std::string name = ownedName("lp");
  createStream(name, "text/plain");
  request("POST", "/v1/stream/" + name, {}, "abc");
  auto r = request("GET", "/v1/stream/" + name + "?offset=now&live=long-poll&timeout=0.2");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->headerOr("stream-next-offset"), "0000000000000003");
  EXPECT_EQ(r->headerOr("stream-up-to-date"), "true");
  EXPECT_EQ(r->headerOr("stream-cursor"), "0000000000000003");
  EXPECT_EQ(r->headerOr("cache-control"), "no-store");
  EXPECT_EQ(r->headerOr("prisma-streams-origin"), "inst-1");
  EXPECT_EQ(r->body, "");
}

TEST_F(EmulatorTest, LongPollWithDataAnswersAtOnce) {
  const std::string name = ownedName("lpdata");
  createStream(name, "text/plain");
  request("POST", "/v1/stream/" + name, {}, "abc");
  auto r = request("GET", "/v1/stream/" + name + "?offset=-1&live=long-poll&timeout=20");
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "abc");
}

TEST_F(EmulatorTest, LongPollIsWokenByAnAppend) {
  const std::string name = ownedName("lpwake");
  createStream(name, "text/plain");
  request("POST", "/v1/stream/" + name, {}, "abc");
  HttpClient poller;
  ASSERT_TRUE(poller.connect(port_).isOk());
  // Waits from the tail (an explicit offset: the order of the two requests does not matter).
  ASSERT_TRUE(poller
                  .sendRequest("GET", "/v1/stream/" + name +
                                          "?offset=0000000000000003&live=long-poll&timeout=20")
                  .isOk());
  ASSERT_EQ(request("POST", "/v1/stream/" + name, {}, "def")->status, 204);
  const auto start = std::chrono::steady_clock::now();
  auto r = poller.readResponse(10s);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);  // long before the 20 s timeout
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "def");
  EXPECT_EQ(r->headerOr("stream-next-offset"), "0000000000000006");
}

TEST_F(EmulatorTest, SseFramingKeepAliveAndClose) {
  startEmulator({"--sse-keepalive-ms", "100"});
  const std::string name = ownedName("sse");
  createStream(name, "application/json");
  request("POST", "/v1/stream/" + name, {}, R"([{"n":1},{"n":2}])");

  HttpClient c;
  ASSERT_TRUE(c.connect(port_).isOk());
  ASSERT_TRUE(c.sendRequest("GET", "/v1/stream/" + name + "?offset=-1&live=sse").isOk());
  auto head = c.readResponseHead();
  ASSERT_TRUE(head.isOk()) << head.status().message();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headerOr("content-type"), "text/event-stream");
  EXPECT_EQ(head->headerOr("cache-control"), "no-cache");
  EXPECT_EQ(head->headerOr("x-accel-buffering"), "no");
  EXPECT_EQ(head->headerOr("prisma-streams-origin"), "inst-1");

  auto data = c.readBodyUntil("\n\n");
  ASSERT_TRUE(data.isOk());
  EXPECT_EQ(*data, "event: data\ndata:[{\"n\":1},{\"n\":2}]\n\n");
  auto control = c.readBodyUntil("\n\n");
  ASSERT_TRUE(control.isOk());
  EXPECT_EQ(*control,
            "event: control\ndata:{\"streamNextOffset\":\"0000000000000002\","
            "\"streamCursor\":\"0000000000000002\",\"upToDate\":true}\n\n");

  // A keep-alive comment arrives on the short interval.
  auto keepalive = c.readBodyUntil("\n\n", 5s);
  ASSERT_TRUE(keepalive.isOk());
  EXPECT_EQ(*keepalive, ": keep-alive\n\n");

  request("POST", "/v1/stream/" + name, {}, R"({"n":3})");
  std::string frame;
  do {  // skip keep-alives
    auto f = c.readBodyUntil("\n\n");
    ASSERT_TRUE(f.isOk());
    frame = *f;
  } while (frame == ": keep-alive\n\n");
  EXPECT_EQ(frame, "event: data\ndata:[{\"n\":3}]\n\n");

  // Deleting the stream ends the feed with a streamClosed control frame, then EOF.
  ASSERT_EQ(request("DELETE", "/v1/stream/" + name)->status, 204);
  auto rest = c.readResponse();
  ASSERT_TRUE(rest.isOk()) << rest.status().message();
  EXPECT_TRUE(rest->complete);
  EXPECT_NE(rest->body.find("event: control\ndata:{\"streamNextOffset\":\"0000000000000003\","
                            "\"streamCursor\":\"0000000000000003\",\"streamClosed\":true}\n\n"),
            std::string::npos)
      << rest->body;
}

TEST_F(EmulatorTest, SseOnByteStreamIsBase64) {
  const std::string name = ownedName("sseb");
  createStream(name, "application/octet-stream");
  request("POST", "/v1/stream/" + name, {}, "hello");
  HttpClient c;
  ASSERT_TRUE(c.connect(port_).isOk());
  ASSERT_TRUE(c.sendRequest("GET", "/v1/stream/" + name + "?offset=-1&live=sse").isOk());
  auto data = c.readBodyUntil("\n\n");
  ASSERT_TRUE(data.isOk());
  EXPECT_EQ(*data, "event: data\ndata:aGVsbG8=\n\n");
}

// /v1/debug/requests counts SSE feeds (live now, started in all) and the bytes of the event
// frames they were sent: what bench/fanout reads as the owner's fan-out cost.
TEST_F(EmulatorTest, SseFeedsAndEventBytesAreCounted) {
  const std::string name = ownedName("ssecount");
  createStream(name, "application/json");
  auto counts = [&] {
    auto r = request("GET", "/v1/debug/requests", {{"x-control-token", kToken}});
    rapidjson::Document d;
    d.Parse(r->body.c_str());
    EXPECT_TRUE(d.IsObject()) << r->body;
    return std::array<uint64_t, 3>{d["sse_feeds_live"].GetUint64(),
                                   d["sse_feeds_started"].GetUint64(),
                                   d["sse_event_bytes"].GetUint64()};
  };
  EXPECT_EQ(counts(), (std::array<uint64_t, 3>{0, 0, 0}));
  HttpClient a, b;
  for (HttpClient* c : {&a, &b}) {
    ASSERT_TRUE(c->connect(port_).isOk());
    ASSERT_TRUE(c->sendRequest("GET", "/v1/stream/" + name + "?offset=-1&live=sse").isOk());
    ASSERT_TRUE(c->readBodyUntil("\n\n").isOk());  // the first control frame
  }
  const std::string control =
      "event: control\ndata:{\"streamNextOffset\":\"0000000000000000\","
      "\"streamCursor\":\"0000000000000000\",\"upToDate\":true}\n\n";
  EXPECT_EQ(counts(), (std::array<uint64_t, 3>{2, 2, 2 * control.size()}));
  request("POST", "/v1/stream/" + name, {}, R"({"n":1})");
  for (HttpClient* c : {&a, &b}) ASSERT_TRUE(c->readBodyUntil("\n\n").isOk());
  const size_t update = std::string("event: data\ndata:[{\"n\":1}]\n\n").size() + control.size();
  EXPECT_EQ(counts(), (std::array<uint64_t, 3>{2, 2, 2 * control.size() + 2 * update}));
  ASSERT_EQ(request("DELETE", "/v1/stream/" + name)->status, 204);
  EXPECT_EQ(counts()[0], 0u);  // ended feeds are no longer live
}

}  // namespace
}  // namespace ferry::testing
