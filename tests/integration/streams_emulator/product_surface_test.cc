// The product surface /v1/streams/{name}... of the emulator.
#include "tests/integration/streams_emulator/emulator_fixture.h"

namespace ferry::testing {
namespace {

TEST_F(EmulatorTest, ProductCreateAppendBatchRead) {
  const std::string name = ownedName("orders");
  auto c = request("PUT", "/v1/streams/" + name);
  EXPECT_EQ(c->status, 201);
  EXPECT_EQ(c->headerOr("cache-control"), "no-store");
  EXPECT_EQ(request("PUT", "/v1/streams/" + name)->status, 200);

  auto a = request("POST", "/v1/streams/" + name + "/records",
                   {{"content-type", "application/json"}}, R"({"id":1})");
  ASSERT_EQ(a->status, 200) << a->body;
  EXPECT_EQ(a->headerOr("content-type"), "application/json");
  EXPECT_EQ(a->body, R"({"cursor":"0000000000000001","count":1,"duplicate":false,"sealed":false})");
  auto b = request("POST", "/v1/streams/" + name + "/records:batch", {}, R"([{"id":2},{"id":3}])");
  EXPECT_EQ(b->body, R"({"cursor":"0000000000000003","count":2,"duplicate":false,"sealed":false})");
  EXPECT_EQ(request("POST", "/v1/streams/" + name + "/records:batch", {}, "{}")->status, 400);

  auto read = request("GET", "/v1/streams/" + name + "/records?cursor=0000000000000001");
  EXPECT_EQ(read->body,
            R"({"records":[{"id":2},{"id":3}],"cursor":"0000000000000003","upToDate":true})");
  // The same stream on the raw surface.
  EXPECT_EQ(request("GET", "/v1/stream/" + name)->body, R"([{"id":1},{"id":2},{"id":3}])");
}

TEST_F(EmulatorTest, ProductProducerDuplicate) {
  const std::string name = ownedName("pdup");
  request("PUT", "/v1/streams/" + name);
  const Headers producer = {{"producer-id", "w"}, {"producer-epoch", "0"}, {"producer-seq", "0"}};
  request("POST", "/v1/streams/" + name + "/records", producer, "1");
  auto dup = request("POST", "/v1/streams/" + name + "/records", producer, "1");
  EXPECT_EQ(dup->status, 200);
  EXPECT_NE(dup->body.find("\"duplicate\":true"), std::string::npos) << dup->body;
}

TEST_F(EmulatorTest, ProductNameIsCutAtTheSubResourceAndDecoded) {
  const std::string name = ownedName("p/q");
  std::string encoded = name;
  encoded.replace(encoded.find('/'), 1, "%2F");
  EXPECT_EQ(request("PUT", "/v1/streams/" + encoded)->status, 201);
  auto a = request("POST", "/v1/streams/" + name + "/records", {}, "7");
  EXPECT_EQ(a->status, 200) << a->body;
  auto missing = request("POST", "/v1/streams/" + ownedName("nope") + "/records", {}, "7");
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("\"retryable\":false"), std::string::npos);
  EXPECT_EQ(missing->headerOr("cache-control"), "no-store");
}

TEST_F(EmulatorTest, ProductNonOwner409Shape) {
  std::string owner;
  const std::string name = foreignName("porders", &owner);
  const std::string message = "shard " + shardOf(name) + " belongs to " + owner;
  auto r = request("POST", "/v1/streams/" + name + "/records", {}, R"({"id":1})");
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(r->headerOr("content-type"), "application/json");
  EXPECT_EQ(r->headerOr("cache-control"), "no-store");
  EXPECT_EQ(r->headerOr("streams-replay-to"), owner);
  EXPECT_EQ(r->headerOr("prisma-streams-origin"), "inst-1");
  EXPECT_EQ(r->body, "{\"error\":{\"code\":\"not_stream_owner\",\"message\":\"" + message +
                         "\",\"retryable\":true}}");
  EXPECT_EQ(request("POST", "/v1/streams/" + name + "/records:batch", {}, "[1]")->status, 409);
  EXPECT_EQ(request("GET", "/v1/streams/" + name + "/records:long-poll")->body, r->body);

  // Product create and SSE connect answer in the raw not_ring_owner form.
  const std::string raw_form =
      "{\"error\":{\"code\":\"not_ring_owner\",\"message\":\"" + message + "\"}}";
  auto create = request("PUT", "/v1/streams/" + name);
  EXPECT_EQ(create->status, 409);
  EXPECT_EQ(create->body, raw_form);
  EXPECT_EQ(create->headerOr("streams-replay-to"), owner);
  auto sse = request("GET", "/v1/streams/" + name + "/records:sse");
  EXPECT_EQ(sse->status, 409);
  EXPECT_EQ(sse->body, raw_form);
}

TEST_F(EmulatorTest, ProductLongPollAndSse) {
  const std::string name = ownedName("plive");
  request("PUT", "/v1/streams/" + name);
  auto timeout = request("GET", "/v1/streams/" + name + "/records:long-poll?timeout=0.1");
  EXPECT_EQ(timeout->status, 204);
  EXPECT_EQ(timeout->headerOr("stream-up-to-date"), "true");

  HttpClient sse;
  ASSERT_TRUE(sse.connect(port_).isOk());
  ASSERT_TRUE(sse.sendRequest("GET", "/v1/streams/" + name + "/records:sse").isOk());
  auto head = sse.readResponseHead();
  ASSERT_TRUE(head.isOk());
  EXPECT_EQ(head->headerOr("content-type"), "text/event-stream");
  auto control = sse.readBodyUntil("\n\n");
  ASSERT_TRUE(control.isOk());
  EXPECT_EQ(control->rfind("event: control\n", 0), 0u) << *control;
  request("POST", "/v1/streams/" + name + "/records", {}, R"({"x":1})");
  auto data = sse.readBodyUntil("\n\n");
  ASSERT_TRUE(data.isOk());
  EXPECT_EQ(*data, "event: data\ndata:[{\"x\":1}]\n\n");
}

}  // namespace
}  // namespace ferry::testing
