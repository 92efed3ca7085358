// The raw surface /v1/stream/{name} of the emulator and its ownership answers.
#include <rapidjson/document.h>

#include "tests/integration/streams_emulator/emulator_fixture.h"

namespace ferry::testing {
namespace {

TEST_F(EmulatorTest, CreateAppendReadByteStream) {
  const std::string name = ownedName("bytes");
  auto created = request("PUT", "/v1/stream/" + name, {{"content-type", "text/plain"}});
  ASSERT_TRUE(created.isOk());
  EXPECT_EQ(created->status, 201);
  EXPECT_EQ(created->headerOr("location"),
            "http://127.0.0.1:" + std::to_string(port_) + "/v1/stream/" + name);
  EXPECT_EQ(created->headerOr("prisma-streams-origin"), "inst-1");

  auto again = request("PUT", "/v1/stream/" + name, {{"content-type", "text/plain"}});
  EXPECT_EQ(again->status, 200);  // idempotent re-PUT with the same content type
  auto other = request("PUT", "/v1/stream/" + name, {{"content-type", "application/json"}});
  EXPECT_EQ(other->status, 409);

  auto a1 = request("POST", "/v1/stream/" + name, {}, "hello ");
  EXPECT_EQ(a1->status, 204);
  EXPECT_EQ(a1->headerOr("stream-next-offset"), "0000000000000006");
  auto a2 = request("POST", "/v1/stream/" + name, {}, "world");
  EXPECT_EQ(a2->headerOr("stream-next-offset"), "0000000000000011");

  auto all = request("GET", "/v1/stream/" + name + "?offset=-1");
  EXPECT_EQ(all->status, 200);
  EXPECT_EQ(all->body, "hello world");
  EXPECT_EQ(all->headerOr("content-type"), "text/plain");
  EXPECT_EQ(all->headerOr("stream-up-to-date"), "true");
  auto rest = request("GET", "/v1/stream/" + name + "?offset=0000000000000006");
  EXPECT_EQ(rest->body, "world");

  HttpClient c;
  ASSERT_TRUE(c.connect(port_).isOk());
  ASSERT_TRUE(c.sendRequest("HEAD", "/v1/stream/" + name).isOk());
  auto head = c.readResponse();
  ASSERT_TRUE(head.isOk());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headerOr("stream-next-offset"), "0000000000000011");

  EXPECT_EQ(request("DELETE", "/v1/stream/" + name)->status, 204);
  auto gone = request("GET", "/v1/stream/" + name);
  EXPECT_EQ(gone->status, 404);
  EXPECT_NE(gone->body.find("\"stream_not_found\""), std::string::npos);
  EXPECT_EQ(gone->headerOr("prisma-streams-origin"), "inst-1");
}

TEST_F(EmulatorTest, NameMayContainSlashesAndIsPercentDecoded) {
  std::string base = ownedName("a/b");
  createStream(base, "text/plain");
  // The same stream addressed with %2F.
  std::string encoded = base;
  encoded.replace(encoded.find('/'), 1, "%2F");
  auto r = request("POST", "/v1/stream/" + encoded, {}, "x");
  EXPECT_EQ(r->status, 204) << r->body;
}

TEST_F(EmulatorTest, JsonStreamTopLevelArrayIsABatch) {
  const std::string name = ownedName("json");
  createStream(name, "application/json");
  auto r = request("POST", "/v1/stream/" + name, {{"content-type", "application/json"}},
                   R"([{"a":1}, 2, "three"])");
  EXPECT_EQ(r->headerOr("stream-next-offset"), "0000000000000003");
  r = request("POST", "/v1/stream/" + name, {}, R"({"b":4})");
  EXPECT_EQ(r->headerOr("stream-next-offset"), "0000000000000004");
  auto read = request("GET", "/v1/stream/" + name + "?offset=-1");
  EXPECT_EQ(read->body, R"([{"a":1},2,"three",{"b":4}])");
  auto from2 = request("GET", "/v1/stream/" + name + "?offset=0000000000000002");
  EXPECT_EQ(from2->body, R"(["three",{"b":4}])");
  EXPECT_EQ(request("POST", "/v1/stream/" + name, {}, "not json")->status, 400);
}

TEST_F(EmulatorTest, ChunkedRequestBodyAndKeepAlivePipelining) {
  const std::string name = ownedName("chunked");
  createStream(name, "text/plain");
  HttpClient c;
  ASSERT_TRUE(c.connect(port_).isOk());
  // Two pipelined requests on one connection, the first with a chunked body.
  std::string bytes = "POST /v1/stream/" + name +
                      " HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
                      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  bytes += c.buildRequest("GET", "/v1/stream/" + name + "?offset=-1", {}, "");
  ASSERT_TRUE(c.send(bytes).isOk());
  auto first = c.readResponse();
  ASSERT_TRUE(first.isOk()) << first.status().message();
  EXPECT_EQ(first->status, 204);
  auto second = c.readResponse();
  ASSERT_TRUE(second.isOk()) << second.status().message();
  EXPECT_EQ(second->body, "abcde");
}

TEST_F(EmulatorTest, NonOwner409HasTheExactShape) {
  std::string owner;
  const std::string name = foreignName("elsewhere", &owner);
  const std::string body(100000, 'x');  // read completely before the answer
  auto r = request("POST", "/v1/stream/" + name, {{"content-type", "text/plain"}}, body);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(r->headerOr("content-type"), "application/json");
  EXPECT_EQ(r->headerOr("streams-replay-to"), owner);
  EXPECT_EQ(r->headerOr("prisma-streams-origin"), "inst-1");
  EXPECT_EQ(r->header("cache-control"), nullptr);
  EXPECT_EQ(r->body, "{\"error\":{\"code\":\"not_ring_owner\",\"message\":\"shard " +
                         shardOf(name) + " belongs to " + owner + "\"}}");
  // Every data-plane method at a non-owner answers the same, even for unknown streams.
  for (const char* method : {"PUT", "GET", "DELETE"}) {
    auto m = request(method, "/v1/stream/" + name);
    EXPECT_EQ(m->status, 409) << method;
    EXPECT_EQ(m->headerOr("streams-replay-to"), owner) << method;
  }
  // The connection stays usable after a 409 (the whole body was read).
  HttpClient c;
  ASSERT_TRUE(c.connect(port_).isOk());
  ASSERT_TRUE(c.sendRequest("POST", "/v1/stream/" + name, {}, body).isOk());
  EXPECT_EQ(c.readResponse()->status, 409);
  ASSERT_TRUE(c.sendRequest("GET", "/health").isOk());
  EXPECT_EQ(c.readResponse()->status, 200);
}

TEST_F(EmulatorTest, UnknownStreamIs404AndUnknownRouteToo) {
  auto r = request("POST", "/v1/stream/" + ownedName("missing"), {}, "x");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->headerOr("content-type"), "application/json");
  auto other = request("GET", "/nope");
  EXPECT_EQ(other->status, 404);
  EXPECT_EQ(other->headerOr("prisma-streams-origin"), "inst-1");
}

TEST_F(EmulatorTest, ProducerDuplicateAndGap) {
  const std::string name = ownedName("producer");
  createStream(name, "text/plain");
  auto send = [&](const std::string& seq, const std::string& body) {
    return request("POST", "/v1/stream/" + name,
                   {{"producer-id", "p1"}, {"producer-epoch", "1"}, {"producer-seq", seq}}, body);
  };
  auto first = send("0", "aaa");
  EXPECT_EQ(first->status, 200);  // first append of a fresh producer
  EXPECT_EQ(first->headerOr("stream-next-offset"), "0000000000000003");
  auto second = send("1", "bb");
  EXPECT_EQ(second->status, 204);
  EXPECT_EQ(second->headerOr("stream-next-offset"), "0000000000000005");
  // A repeated seq is acknowledged at its original offset and not appended again.
  auto dup = send("0", "aaa");
  EXPECT_EQ(dup->status, 204);
  EXPECT_EQ(dup->headerOr("stream-next-offset"), "0000000000000003");
  auto gap = send("5", "zz");
  EXPECT_EQ(gap->status, 409);
  EXPECT_EQ(gap->headerOr("producer-expected-seq"), "2");
  EXPECT_EQ(gap->headerOr("producer-received-seq"), "5");
  EXPECT_NE(gap->body.find("\"producer_seq_gap\""), std::string::npos);
  EXPECT_EQ(request("GET", "/v1/stream/" + name)->body, "aaabb");
  // Producer headers come all or none.
  auto partial = request("POST", "/v1/stream/" + name, {{"producer-id", "p1"}}, "x");
  EXPECT_EQ(partial->status, 400);
}

TEST_F(EmulatorTest, AppliedAppendsAreListedInOrder) {
  const std::string name = ownedName("applied");
  createStream(name, "text/plain");
  request("POST", "/v1/stream/" + name, {{"streams-forwarded", "inst-3"}}, "abc");
  request("POST", "/v1/stream/" + name,
          {{"producer-id", "p"}, {"producer-epoch", "0"}, {"producer-seq", "0"}}, "defg");
  request("POST", "/v1/stream/" + name,
          {{"producer-id", "p"}, {"producer-epoch", "0"}, {"producer-seq", "0"}}, "defg");  // dup
  auto r = request("GET", "/v1/debug/applied?stream=" + name, {{"x-control-token", kToken}});
  ASSERT_EQ(r->status, 200);
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  ASSERT_TRUE(d.IsArray()) << r->body;
  ASSERT_EQ(d.Size(), 2u) << r->body;
  EXPECT_STREQ(d[0]["offset"].GetString(), "0000000000000000");
  EXPECT_EQ(d[0]["bytes"].GetUint64(), 3u);
  EXPECT_STREQ(d[0]["body_sha256"].GetString(),
               "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(d[0]["producer"].IsNull());
  EXPECT_STREQ(d[0]["forwarded_by"].GetString(), "inst-3");
  EXPECT_STREQ(d[1]["offset"].GetString(), "0000000000000003");
  EXPECT_STREQ(d[1]["producer"]["id"].GetString(), "p");
  EXPECT_EQ(d[1]["producer"]["seq"].GetUint64(), 0u);
  EXPECT_TRUE(d[1]["forwarded_by"].IsNull());
}

TEST_F(EmulatorTest, AppliedLogKeepsTheNewestEntriesUpToItsLimit) {
  startEmulator({"--applied-log-limit", "2"});
  const std::string name = ownedName("capped");
  createStream(name, "text/plain");
  for (const char* body : {"a", "bb", "ccc"}) request("POST", "/v1/stream/" + name, {}, body);
  auto r = request("GET", "/v1/debug/applied?stream=" + name, {{"x-control-token", kToken}});
  ASSERT_EQ(r->status, 200);
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  ASSERT_TRUE(d.IsArray()) << r->body;
  ASSERT_EQ(d.Size(), 2u) << r->body;
  EXPECT_EQ(d[0]["bytes"].GetUint64(), 2u) << "the oldest entry was dropped";
  EXPECT_EQ(d[1]["bytes"].GetUint64(), 3u);
  EXPECT_EQ(request("GET", "/v1/stream/" + name)->body, "abbccc") << "only the log is capped";
}

TEST_F(EmulatorTest, RequestCountsByRouteAndStatus) {
  std::string owner;
  const std::string foreign = foreignName("counted", &owner);
  request("POST", "/v1/stream/" + foreign, {}, "x");
  request("POST", "/v1/stream/" + foreign, {{"streams-forwarded", "inst-2"}}, "x");
  auto r = request("GET", "/v1/debug/requests", {{"x-control-token", kToken}});
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  ASSERT_TRUE(d.IsObject()) << r->body;
  EXPECT_EQ(d["routes"]["raw_append"]["409"].GetUint64(), 2u);
  EXPECT_EQ(d["forwarded_routes"]["raw_append"]["409"].GetUint64(), 1u);
}

TEST_F(EmulatorTest, DebugRoutesNeedTheToken) {
  auto r = request("GET", "/v1/debug/requests");
  EXPECT_EQ(r->status, 403);
  r = request("POST", "/v1/debug/control", {{"x-control-token", "wrong"}}, "{}");
  EXPECT_EQ(r->status, 403);
}

TEST_F(EmulatorTest, BodyOverTheLimitIs413) {
  startEmulator({"--body-limit-bytes", "1000"});
  const std::string name = ownedName("big");
  createStream(name, "text/plain");
  auto r = request("POST", "/v1/stream/" + name, {}, std::string(5000, 'x'));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("\"body_too_large\""), std::string::npos);
}

TEST_F(EmulatorTest, HealthReadyLive) {
  EXPECT_EQ(request("GET", "/health")->body, "ok");
  EXPECT_EQ(request("GET", "/readyz")->body, "ok");
  EXPECT_EQ(request("GET", "/livez")->body, "alive");
}

TEST_F(EmulatorTest, DrainServesThenExits) {
  startEmulator({"--drain-seconds", "1.5"});
  const std::string name = ownedName("drain");
  createStream(name, "text/plain");
  emulator_->signal(SIGTERM);
  // /health flips to 503 while data-plane requests are still served.
  bool draining = false;
  const auto deadline = std::chrono::steady_clock::now() + 1s;
  while (!draining && std::chrono::steady_clock::now() < deadline) {
    auto h = request("GET", "/health");
    ASSERT_TRUE(h.isOk());
    draining = h->status == 503;
    if (draining) {
      EXPECT_EQ(h->body, "runtime draining");
      EXPECT_EQ(request("GET", "/readyz")->status, 503);
      EXPECT_EQ(request("GET", "/livez")->status, 200);
    }
  }
  EXPECT_TRUE(draining);
  EXPECT_EQ(request("POST", "/v1/stream/" + name, {}, "x")->status, 204);
  auto code = emulator_->waitExit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
}

}  // namespace
}  // namespace ferry::testing
