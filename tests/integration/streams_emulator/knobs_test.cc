// The emulator's test knobs (POST /v1/debug/control) and the hand-over.
#include <csignal>

#include "integration/streams_emulator/ownership.h"
#include "tests/integration/streams_emulator/emulator_fixture.h"

namespace ferry::testing {
namespace {

TEST_F(EmulatorTest, Early409IsAnsweredBeforeTheBodyIsSent) {
  control(R"({"early_409":true})");
  std::string owner;
  const std::string name = foreignName("early", &owner);
  HttpClient c;
  ASSERT_TRUE(c.connect(port_).isOk());
  // Only the head: not one body byte is sent.
  ASSERT_TRUE(
      c.send("POST /v1/stream/" + name + " HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\n")
          .isOk());
  auto r = c.readResponse(5s);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(r->headerOr("streams-replay-to"), owner);
  EXPECT_EQ(r->headerOr("connection"), "close");
  EXPECT_TRUE(c.isClosedByPeer(5s));
  // The owner's streams are unaffected.
  const std::string mine = ownedName("early-own");
  createStream(mine, "text/plain");
  EXPECT_EQ(request("POST", "/v1/stream/" + mine, {}, "x")->status, 204);
}

TEST_F(EmulatorTest, Early409AfterBytes) {
  control(R"({"early_409_after_bytes":10})");
  const std::string name = foreignName("early-n", nullptr);
  HttpClient c;
  ASSERT_TRUE(c.connect(port_).isOk());
  ASSERT_TRUE(c.send("POST /v1/stream/" + name +
                     " HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\n12345")
                  .isOk());
  EXPECT_FALSE(c.readResponse(200ms).isOk());  // 5 bytes: no answer yet
  ASSERT_TRUE(c.send("67890abc").isOk());
  auto r = c.readResponse(5s);  // 13 of 100000 bytes sent
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 409);
  EXPECT_TRUE(c.isClosedByPeer(5s));
}

TEST_F(EmulatorTest, DelayKnobDelaysDataPlaneOnly) {
  const std::string name = ownedName("delay");
  createStream(name, "text/plain");
  control(R"({"delay_ms":300})");
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(request("POST", "/v1/stream/" + name, {}, "x")->status, 204);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  control("{}");
  start = std::chrono::steady_clock::now();
  EXPECT_EQ(request("POST", "/v1/stream/" + name, {}, "x")->status, 204);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 300ms);
}

TEST_F(EmulatorTest, CutAfterBytesClosesMidBody) {
  const std::string name = ownedName("cut");
  createStream(name, "text/plain");
  request("POST", "/v1/stream/" + name, {}, "hello world");
  control(R"({"cut_after_bytes":5})");
  HttpClient c;
  ASSERT_TRUE(c.connect(port_).isOk());
  ASSERT_TRUE(c.sendRequest("GET", "/v1/stream/" + name).isOk());
  auto r = c.readResponse(5s);
  ASSERT_FALSE(r.isOk());  // the connection closed before the 11-byte body ended
  EXPECT_EQ(c.partial().status, 200);
  EXPECT_EQ(c.partial().headerOr("content-length"), "11");
  EXPECT_EQ(c.partial().body, "hello");
}

TEST_F(EmulatorTest, AppendTimeoutAppliesThenAnswers408) {
  const std::string name = ownedName("timeout");
  createStream(name, "text/plain");
  control(R"({"append_timeout":true})");
  auto r = request("POST", "/v1/stream/" + name, {}, "applied");
  EXPECT_EQ(r->status, 408);
  EXPECT_NE(r->body.find("\"append_timeout\""), std::string::npos);
  control(R"({"reset_knobs":true})");
  EXPECT_EQ(request("GET", "/v1/stream/" + name)->body, "applied");
}

TEST_F(EmulatorTest, RefuseClosesNewConnections) {
  HttpClient admin;  // a keep-alive connection opened before the knob
  ASSERT_TRUE(admin.connect(port_).isOk());
  const Headers token = {{"x-control-token", kToken}};
  ASSERT_TRUE(admin.sendRequest("POST", "/v1/debug/control", token, R"({"refuse":true})").isOk());
  ASSERT_EQ(admin.readResponse()->status, 200);

  HttpClient refused;
  ASSERT_TRUE(refused.connect(port_).isOk());  // the kernel accepts, the emulator closes
  refused.sendRequest("GET", "/health");
  EXPECT_TRUE(refused.isClosedByPeer(5s));
  EXPECT_EQ(refused.readSome(0ms), "");

  ASSERT_TRUE(admin.sendRequest("POST", "/v1/debug/control", token, "{}").isOk());
  ASSERT_EQ(admin.readResponse()->status, 200);
  EXPECT_EQ(request("GET", "/health")->status, 200);

  // SIGUSR1 clears the knobs too (the way out without a prepared connection).
  control(R"({"refuse":true})");
  emulator_->signal(SIGUSR1);
  bool served = false;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!served && std::chrono::steady_clock::now() < deadline) {
    auto r = request("GET", "/health");
    served = r.isOk() && r->status == 200;
  }
  EXPECT_TRUE(served);
}

TEST_F(EmulatorTest, ResetSendsRst) {
  const std::string name = ownedName("reset");
  createStream(name, "text/plain");
  control(R"({"reset":true})");
  HttpClient c;
  ASSERT_TRUE(c.connect(port_).isOk());
  ASSERT_TRUE(c.sendRequest("POST", "/v1/stream/" + name, {}, "x").isOk());
  EXPECT_FALSE(c.readResponse(5s).isOk());
  EXPECT_TRUE(c.wasReset());
  // Health and debug routes are never subject to knobs.
  EXPECT_EQ(request("GET", "/health")->status, 200);
  control("{}");
  EXPECT_EQ(request("POST", "/v1/stream/" + name, {}, "x")->status, 204);
}

TEST_F(EmulatorTest, HandOverAnswers503ThenNamesTheNewOwner) {
  // A stream inst-1 owns now; after inst-1 leaves, the remaining members own it.
  const std::string name = ownedName("moving");
  createStream(name, "text/plain");
  const std::vector<std::string> after = {"inst-2", "inst-3", "inst-4"};
  const std::string new_owner = after[streams::ownerIndex(name, shards_, after)];
  std::string other_owner;
  const std::string foreign = foreignName("not-moving", &other_owner);

  control(R"({"members":["inst-2","inst-3","inst-4"],"handover_ms":500})");
  auto moving = request("POST", "/v1/stream/" + name, {}, "x");
  EXPECT_EQ(moving->status, 503);
  EXPECT_EQ(moving->headerOr("retry-after"), "1");
  EXPECT_NE(moving->body.find("\"shard_moving\""), std::string::npos);
  // Streams that were not inst-1's go straight to their owner.
  EXPECT_EQ(request("POST", "/v1/stream/" + foreign, {}, "x")->status, 409);

  // Then (when the hand-over window ends) a 409 naming the new owner.
  StatusOr<HttpResponse> r = unavailable("not yet");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  do {
    r = request("POST", "/v1/stream/" + name, {}, "x");
    ASSERT_TRUE(r.isOk());
  } while (r->status == 503 && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(r->headerOr("streams-replay-to"), new_owner);
  EXPECT_NE(r->body.find("belongs to " + new_owner), std::string::npos);
}

TEST_F(EmulatorTest, MemberChangeEndsFeedsOfMovedStreams) {
  const std::string name = ownedName("feed-moves");
  createStream(name, "application/json");
  HttpClient c;
  ASSERT_TRUE(c.connect(port_).isOk());
  ASSERT_TRUE(c.sendRequest("GET", "/v1/stream/" + name + "?offset=-1&live=sse").isOk());
  ASSERT_TRUE(c.readBodyUntil("\n\n").isOk());  // the first control frame
  control(R"({"members":["inst-2","inst-3","inst-4"]})");
  auto rest = c.readResponse(5s);
  ASSERT_TRUE(rest.isOk()) << rest.status().message();
  EXPECT_TRUE(rest->complete);
  EXPECT_EQ(rest->body.find("streamClosed"), std::string::npos);
}

}  // namespace
}  // namespace ferry::testing
