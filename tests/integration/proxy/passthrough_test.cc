// Black-box HTTP/1.1 -> HTTP/1.1 tests of the core proxy path: bodies byte-exact both ways,
// keep-alive and pooling, pipelining, hop-by-hop fields, Expect: 100-continue, HEAD, an
// unreachable upstream, and the stale keep-alive retry rules (RFC 9112 §9.3.1).

#include <rapidjson/document.h>

#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

std::string errorCode(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("error") ||
      !doc["error"].IsObject() || !doc["error"].HasMember("code") ||
      !doc["error"]["code"].IsString()) {
    return "<not an error envelope: " + json + ">";
  }
  return doc["error"]["code"].GetString();
}

using Http1PassThroughTest = ProxyTest;

TEST_F(Http1PassThroughTest, GetAndResponseArriveIntactAndKeepAliveReusesUpstream) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(
      "GET /v1/items?x=1&y=%20 HTTP/1.1\r\nHost: test.local\r\nX-Custom: a b\r\n\r\n"));
  auto first = upstream_.waitForRequest();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->message.method, "GET");
  EXPECT_EQ(first->message.path, "/v1/items?x=1&y=%20");
  EXPECT_EQ(first->message.header("host"), "test.local");
  EXPECT_EQ(first->message.header("x-custom"), "a b");
  EXPECT_FALSE(first->message.header("content-length"));
  EXPECT_FALSE(first->message.header("transfer-encoding"));
  const std::string body = binaryBody(3000);
  ASSERT_TRUE(first->connection->sendAll(
      "HTTP/1.1 201 Created\r\nX-Up: yes\r\nContent-Type: application/octet-stream\r\n"
      "Content-Length: 3000\r\n\r\n" +
      body));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 201);
  EXPECT_EQ(response->header("x-up"), "yes");
  EXPECT_EQ(response->header("content-type"), "application/octet-stream");
  EXPECT_EQ(response->body, body);

  int64_t reuses = ferry_->stat("ferry_upstream_reuses_total");
  ASSERT_GE(reuses, 0);
  // Second request on the same client connection; ferry reuses its upstream connection.
  ASSERT_TRUE(client.sendAll(simpleGet("/second")));
  auto second = upstream_.waitForRequest();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->message.path, "/second");
  EXPECT_EQ(second->connection, first->connection) << "a new upstream connection was opened";
  EXPECT_EQ(upstream_.connectionCount(), 1u);
  ASSERT_TRUE(second->connection->sendAll(okResponse("two")));
  response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "two");
  EXPECT_EQ(ferry_->stat("ferry_upstream_reuses_total"), reuses + 1);
}

TEST_F(Http1PassThroughTest, PostWithContentLengthArrivesByteExact) {
  startFerry();
  Socket client = connectClient();
  const std::string body = binaryBody(200 * 1024);
  ASSERT_TRUE(
      client.sendAll("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Type: x/y\r\n"
                     "Content-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  EXPECT_EQ(request->message.method, "POST");
  EXPECT_EQ(request->message.header("content-length"), std::to_string(body.size()));
  EXPECT_FALSE(request->message.header("transfer-encoding"));
  EXPECT_EQ(request->message.body.size(), body.size());
  EXPECT_TRUE(request->message.body == body) << "request body changed on the way";
  ASSERT_TRUE(request->connection->sendAll(okResponse("ok")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "ok");
}

TEST_F(Http1PassThroughTest, PostChunkedArrivesByteExact) {
  startFerry();
  Socket client = connectClient();
  const std::string body = binaryBody(70000);
  std::string wire = "POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  // Uneven chunks, one with an extension.
  size_t sizes[] = {1, 4095, 30000, 35904};
  size_t at = 0;
  for (size_t i = 0; i < 4; ++i) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "%zx", sizes[i]);
    wire +=
        std::string(hex) + (i == 1 ? ";ext=1" : "") + "\r\n" + body.substr(at, sizes[i]) + "\r\n";
    at += sizes[i];
  }
  ASSERT_EQ(at, body.size());
  wire += "0\r\n\r\n";
  ASSERT_TRUE(client.sendAll(wire));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  EXPECT_TRUE(request->message.chunked);
  EXPECT_FALSE(request->message.header("content-length"));
  EXPECT_TRUE(request->message.body == body) << "request body changed on the way";
  // A chunked response comes back byte-exact too.
  const std::string response_body = binaryBody(5000);
  ASSERT_TRUE(
      request->connection->sendAll("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1388\r\n" +
                                   response_body + "\r\n0\r\n\r\n"));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_TRUE(response->body == response_body);
}

TEST_F(Http1PassThroughTest, PipelinedRequestsAnsweredInOrder) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/one") + "POST /two HTTP/1.1\r\nHost: h\r\n"
                                                 "Content-Length: 3\r\n\r\nabc"));
  auto one = upstream_.waitForRequest();
  ASSERT_TRUE(one);
  EXPECT_EQ(one->message.path, "/one");
  // HTTP/1.1: the second request goes upstream only after the first response.
  EXPECT_FALSE(one->connection->anythingWithin(std::chrono::milliseconds(100)));
  ASSERT_TRUE(one->connection->sendAll(okResponse("first")));
  auto two = upstream_.waitForRequest();
  ASSERT_TRUE(two);
  EXPECT_EQ(two->message.path, "/two");
  EXPECT_EQ(two->message.body, "abc");
  ASSERT_TRUE(two->connection->sendAll(okResponse("second")));
  auto r1 = readResponse(client, defaultDeadline());
  auto r2 = readResponse(client, defaultDeadline());
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(r1->body, "first");
  EXPECT_EQ(r2->body, "second");
}

TEST_F(Http1PassThroughTest, HopByHopFieldsAreNotForwardedEitherWay) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(
      client.sendAll("GET /h HTTP/1.1\r\nHost: h\r\n"
                     "Connection: keep-alive, X-Secret\r\n"
                     "Keep-Alive: timeout=5\r\nTE: trailers\r\nTrailer: X-T\r\n"
                     "Proxy-Connection: keep-alive\r\nX-Secret: s\r\n"
                     "X-Kept: k\r\n\r\n"));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  for (const char* name :
       {"keep-alive", "te", "trailer", "upgrade", "proxy-connection", "x-secret"}) {
    EXPECT_FALSE(request->message.header(name)) << name << " reached the upstream";
  }
  auto connection = request->message.header("connection");
  if (connection) {
    EXPECT_EQ(connection->find("X-Secret"), std::string::npos) << *connection;
    EXPECT_EQ(connection->find("x-secret"), std::string::npos) << *connection;
  }
  EXPECT_EQ(request->message.header("x-kept"), "k");
  ASSERT_TRUE(request->connection->sendAll(
      "HTTP/1.1 200 OK\r\nConnection: X-Up-Secret\r\nKeep-Alive: timeout=9\r\n"
      "X-Up-Secret: u\r\nProxy-Connection: keep-alive\r\nTrailer: X-T\r\nUpgrade: foo\r\n"
      "X-Up-Kept: k\r\nContent-Length: 2\r\n\r\nok"));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  for (const char* name : {"keep-alive", "x-up-secret", "proxy-connection", "trailer", "upgrade"}) {
    EXPECT_FALSE(response->header(name)) << name << " reached the client";
  }
  auto response_connection = response->header("connection");
  if (response_connection) {
    EXPECT_EQ(response_connection->find("X-Up-Secret"), std::string::npos);
  }
  EXPECT_EQ(response->header("x-up-kept"), "k");
  EXPECT_EQ(response->body, "ok");
}

TEST_F(Http1PassThroughTest, UpgradeRequestFieldIsNotForwarded) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(
      client.sendAll("GET /u HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\n"
                     "Upgrade: websocket\r\n\r\n"));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  EXPECT_FALSE(request->message.header("upgrade"));
  auto connection = request->message.header("connection");
  if (connection) {
    EXPECT_EQ(connection->find("pgrade"), std::string::npos) << *connection;
  }
  ASSERT_TRUE(request->connection->sendAll(okResponse("plain")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
}

TEST_F(Http1PassThroughTest, ExpectContinueReachesUpstreamAndItsContinueReachesClientFirst) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(
      client.sendAll("POST /e HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
                     "Expect: 100-continue\r\n\r\n"));
  Socket* up = upstream_.waitForConnection();
  ASSERT_NE(up, nullptr);
  auto head = readHead(*up, defaultDeadline(), true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->header("expect"), "100-continue");
  // The client holds its body until it sees 100 Continue: nothing reaches ferry yet, so the
  // upstream sees no body and the client no final response.
  EXPECT_FALSE(client.anythingWithin(std::chrono::milliseconds(50)))
      << "client got something before the upstream answered: " << client.buffered();
  ASSERT_TRUE(up->sendAll("HTTP/1.1 100 Continue\r\n\r\n"));
  auto interim = readResponse(client, defaultDeadline());
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(client.sendAll("hello"));
  auto body = up->readExactly(5, defaultDeadline());
  ASSERT_TRUE(body);
  EXPECT_EQ(*body, "hello");
  ASSERT_TRUE(up->sendAll(okResponse("done")));
  auto final_response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(final_response);
  EXPECT_EQ(final_response->status, 200);
  EXPECT_EQ(final_response->body, "done");
}

TEST_F(Http1PassThroughTest, HeadResponseHasContentLengthNoBodyAndConnectionStaysUsable) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll("HEAD /h HTTP/1.1\r\nHost: h\r\n\r\n"));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  EXPECT_EQ(request->message.method, "HEAD");
  ASSERT_TRUE(request->connection->sendAll(
      "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\nContent-Type: text/plain\r\n\r\n"));
  auto response = readResponse(client, defaultDeadline(), /*head_request=*/true);
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("content-length"), "1234");
  EXPECT_FALSE(response->header("transfer-encoding"));
  // No body bytes follow the head: the next response starts right after it.
  ASSERT_TRUE(client.sendAll(simpleGet("/after")));
  auto next = upstream_.waitForRequest();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->message.path, "/after");
  ASSERT_TRUE(next->connection->sendAll(okResponse("after")));
  auto after = readResponse(client, defaultDeadline());
  ASSERT_TRUE(after) << "unparseable bytes after the HEAD response: " << client.buffered();
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(after->body, "after");
}

TEST_F(Http1PassThroughTest, UnreachableUpstreamGets503WithRetryAfterAndJsonBody) {
  FerryConfigParams params;
  params.upstream_port = unusedPort();
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/x")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->header("retry-after"), "1");
  EXPECT_EQ(response->header("content-type"), "application/json");
  EXPECT_EQ(errorCode(response->body), "upstream_unavailable");
  EXPECT_GE(ferry_->stat("ferry_upstream_connect_failures_total"), 1);
}

TEST_F(Http1PassThroughTest, UpstreamClosingIdleKeepAliveDoesNotFailTheNextGet) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/1")));
  auto first = upstream_.waitForRequest();
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->connection->sendAll(okResponse("1")));
  first->connection->close();  // keep-alive response, then the upstream closes at once
  auto r1 = readResponse(client, defaultDeadline());
  ASSERT_TRUE(r1);
  ASSERT_TRUE(client.sendAll(simpleGet("/2")));
  auto second = upstream_.waitForRequest();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->message.path, "/2");
  ASSERT_TRUE(second->connection->sendAll(okResponse("2")));
  auto r2 = readResponse(client, defaultDeadline());
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 200);
  EXPECT_EQ(r2->body, "2");
}

TEST_F(Http1PassThroughTest, GetOnStaleKeepAliveIsRetriedOnFreshConnection) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/1")));
  auto first = upstream_.waitForRequest();
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->connection->sendAll(okResponse("1")));
  ASSERT_TRUE(readResponse(client, defaultDeadline()));
  int64_t retries = ferry_->stat("ferry_upstream_retries_total");
  // The close crosses the request: the upstream reads the GET on the pooled connection and
  // closes without answering, as a server whose keep-alive timer fired would.
  ASSERT_TRUE(client.sendAll(simpleGet("/2")));
  auto crossed = upstream_.waitForRequest();
  ASSERT_TRUE(crossed);
  ASSERT_EQ(crossed->connection, first->connection);
  crossed->connection->close();
  auto retried = upstream_.waitForRequest();
  ASSERT_TRUE(retried) << "the GET was not retried";
  EXPECT_EQ(retried->message.path, "/2");
  EXPECT_NE(retried->connection, first->connection);
  ASSERT_TRUE(retried->connection->sendAll(okResponse("fresh")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "fresh");
  EXPECT_EQ(ferry_->stat("ferry_upstream_retries_total"), retries + 1);
}

TEST_F(Http1PassThroughTest, PostResetAfterSendingGets502OutcomeUnknownAndIsNotRetried) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/1")));
  auto first = upstream_.waitForRequest();
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->connection->sendAll(okResponse("1")));
  ASSERT_TRUE(readResponse(client, defaultDeadline()));
  int64_t retries = ferry_->stat("ferry_upstream_retries_total");
  ASSERT_TRUE(client.sendAll("POST /pay HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nmoney"));
  auto post = upstream_.waitForRequest();
  ASSERT_TRUE(post);
  EXPECT_EQ(post->message.body, "money");
  post->connection->resetClose();
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 502);
  EXPECT_EQ(response->header("content-type"), "application/json");
  EXPECT_EQ(errorCode(response->body), "upstream_outcome_unknown");
  EXPECT_NE(response->body.find("may have"), std::string::npos) << response->body;
  EXPECT_EQ(ferry_->stat("ferry_upstream_retries_total"), retries);
  EXPECT_GE(ferry_->stat("ferry_upstream_unknown_outcome_total"), 1);
  // And nothing was sent again.
  EXPECT_FALSE(upstream_.waitForRequest(deadlineIn(std::chrono::milliseconds(100))));
}

}  // namespace
}  // namespace ferry::itest
