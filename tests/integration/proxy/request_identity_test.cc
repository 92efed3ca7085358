// Request identity and forwarding fields (proxy/http/request_identity.h): what the local
// instance and an owner see, what the client gets back, and what the access log says about a
// forward.

#include <rapidjson/document.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

class RequestIdentityTest : public ProxyTest {
 protected:
  // Sends `request` through ferry; the local instance answers `answer`. Returns what the
  // instance saw and what the client got.
  std::pair<HttpMessage, HttpMessage> exchange(const std::string& request,
                                               const std::string& answer) {
    Socket client = connectClient();
    EXPECT_TRUE(client.sendAll(request));
    auto seen = upstream_.waitForRequest();
    EXPECT_TRUE(seen);
    if (!seen) return {};
    EXPECT_TRUE(seen->connection->sendAll(answer));
    auto got = readResponse(client, defaultDeadline());
    EXPECT_TRUE(got);
    return {seen->message, got ? *got : HttpMessage{}};
  }
};

bool isHex32(const std::string& s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

TEST_F(RequestIdentityTest, AValidRequestIdIsKeptAndReturned) {
  startFerry();
  auto [seen, got] =
      exchange("GET /a HTTP/1.1\r\nHost: x\r\nX-Request-Id: abc-123_XYZ\r\n\r\n", okResponse("ok"));
  EXPECT_EQ(seen.header("x-request-id"), "abc-123_XYZ");
  EXPECT_EQ(seen.count("x-request-id"), 1u);
  EXPECT_EQ(got.header("x-request-id"), "abc-123_XYZ");
}

TEST_F(RequestIdentityTest, AMissingOrInvalidRequestIdIsGenerated) {
  startFerry();
  auto [seen, got] = exchange(simpleGet("/a"), okResponse("ok"));
  ASSERT_TRUE(seen.header("x-request-id"));
  EXPECT_TRUE(isHex32(*seen.header("x-request-id"))) << *seen.header("x-request-id");
  EXPECT_EQ(got.header("x-request-id"), seen.header("x-request-id"));

  // Too long, and a space inside: both replaced (and two ids in a row differ).
  const std::string first = *seen.header("x-request-id");
  auto [seen2, got2] =
      exchange("GET /b HTTP/1.1\r\nHost: x\r\nX-Request-Id: " + std::string(201, 'a') + "\r\n\r\n",
               okResponse("ok"));
  ASSERT_TRUE(seen2.header("x-request-id"));
  EXPECT_TRUE(isHex32(*seen2.header("x-request-id")));
  EXPECT_NE(*seen2.header("x-request-id"), first);
  auto [seen3, got3] =
      exchange("GET /c HTTP/1.1\r\nHost: x\r\nX-Request-Id: a b\r\n\r\n", okResponse("ok"));
  ASSERT_TRUE(seen3.header("x-request-id"));
  EXPECT_TRUE(isHex32(*seen3.header("x-request-id")));
  EXPECT_EQ(got3.header("x-request-id"), seen3.header("x-request-id"));
}

TEST_F(RequestIdentityTest, TraceContextPassesUnchanged) {
  startFerry();
  const std::string parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const std::string state = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
  auto [seen, got] = exchange("GET /a HTTP/1.1\r\nHost: x\r\ntraceparent: " + parent +
                                  "\r\ntracestate: " + state + "\r\n\r\n",
                              okResponse("ok"));
  EXPECT_EQ(seen.header("traceparent"), parent);
  EXPECT_EQ(seen.header("tracestate"), state);
}

TEST_F(RequestIdentityTest, ForwardedForAndProtoSayWhoTheClientIs) {
  startFerry();  // trusted_hops 0: what the client claims is replaced
  auto [seen, got] = exchange(
      "GET /a HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\n\r\n",
      okResponse("ok"));
  EXPECT_EQ(seen.header("x-forwarded-for"), "127.0.0.1");
  EXPECT_EQ(seen.header("x-forwarded-proto"), "http");
}

TEST_F(RequestIdentityTest, TrustedHopsKeepTheirEntries) {
  FerryConfigParams params;
  params.extra_yaml = "forwarded_headers: {trusted_hops: 1}\n";
  startFerry(params);
  auto [seen, got] = exchange(
      "GET /a HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 6.6.6.6, 10.0.0.1\r\n"
      "X-Forwarded-Proto: https\r\n\r\n",
      okResponse("ok"));
  EXPECT_EQ(seen.header("x-forwarded-for"), "10.0.0.1, 127.0.0.1");
  EXPECT_EQ(seen.header("x-forwarded-proto"), "https");
}

TEST_F(RequestIdentityTest, ForwardedHeadersCanBeTurnedOff) {
  FerryConfigParams params;
  params.extra_yaml = "forwarded_headers: {x_forwarded: false}\n";
  startFerry(params);
  auto [seen, got] = exchange(simpleGet("/a"), okResponse("ok"));
  EXPECT_FALSE(seen.header("x-forwarded-for"));
  EXPECT_FALSE(seen.header("x-forwarded-proto"));
  EXPECT_TRUE(seen.header("x-request-id"));
}

TEST_F(RequestIdentityTest, FerrysOwnRepliesCarryTheRequestId) {
  FerryConfigParams params;
  params.upstream_port = unusedPort();  // nothing listens: 503 upstream_unavailable
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll("GET /a HTTP/1.1\r\nHost: x\r\nX-Request-Id: mine\r\n\r\n"));
  auto got = readResponse(client, defaultDeadline());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 503);
  EXPECT_EQ(got->header("x-request-id"), "mine");
}

// ---- Forwarding: the owner sees the same id; the access log tells who answered -------------

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first record of the log, once it is there.
rapidjson::Document firstRecord(const std::string& path) {
  rapidjson::Document doc;
  for (Deadline deadline = defaultDeadline(); std::chrono::steady_clock::now() < deadline;) {
    std::string text = readFile(path);
    auto end = text.find('\n');
    if (end != std::string::npos) {
      doc.Parse(text.c_str(), end);
      EXPECT_FALSE(doc.HasParseError()) << text;
      return doc;
    }
    std::this_thread::yield();
  }
  ADD_FAILURE() << "no access log record";
  doc.SetObject();
  return doc;
}

std::string field(const rapidjson::Document& doc, const char* key) {
  if (!doc.IsObject()) return "<not an object>";
  auto it = doc.FindMember(key);
  if (it == doc.MemberEnd()) return "<absent>";
  if (it->value.IsNull()) return "<null>";
  if (it->value.IsString()) return it->value.GetString();
  if (it->value.IsInt()) return std::to_string(it->value.GetInt());
  return "<other>";
}

constexpr const char* kConflict =
    "HTTP/1.1 409 Conflict\r\nStreams-Replay-To: inst-2\r\nContent-Type: application/json\r\n"
    "Content-Length: 2\r\n\r\n{}";

class ForwardIdentityTest : public RequestIdentityTest {
 protected:
  void startWithOwnerAt(uint16_t owner_port) {
    log_ = writeTempFile("", ".log");
    FerryConfigParams params;
    params.access_log = log_;
    params.forwarding_yaml =
        "{enabled: true, allow_http_peers: true, peers: {inst-2: "
        "\"http://127.0.0.1:" +
        std::to_string(owner_port) + "\"}}";
    startFerry(params);
  }
  void TearDown() override {
    if (!log_.empty()) ::unlink(log_.c_str());
  }
  std::string log_;
};

TEST_F(ForwardIdentityTest, TheOwnerSeesTheSameRequestIdAndTheLogNamesIt) {
  FakeUpstream owner;
  startWithOwnerAt(owner.port());
  Socket client = connectClient();
  ASSERT_TRUE(
      client.sendAll("POST /v1/stream/s1 HTTP/1.1\r\nHost: x\r\nX-Request-Id: fwd-1\r\n"
                     "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n"
                     "Content-Length: 3\r\n\r\nabc"));
  auto local = upstream_.waitForRequest();
  ASSERT_TRUE(local);
  EXPECT_EQ(local->message.header("x-request-id"), "fwd-1");
  ASSERT_TRUE(local->connection->sendAll(kConflict));
  auto at_owner = owner.waitForRequest();
  ASSERT_TRUE(at_owner);
  EXPECT_EQ(at_owner->message.header("x-request-id"), "fwd-1");
  EXPECT_EQ(at_owner->message.header("traceparent"),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_EQ(at_owner->message.header("x-forwarded-for"), "127.0.0.1");
  EXPECT_EQ(at_owner->message.header("streams-forwarded"), "inst-1");
  EXPECT_EQ(at_owner->message.body, "abc");
  ASSERT_TRUE(
      at_owner->connection->sendAll("HTTP/1.1 204 No Content\r\nStream-Next-Offset: 3\r\n\r\n"));
  auto got = readResponse(client, defaultDeadline());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 204);
  EXPECT_EQ(got->header("x-request-id"), "fwd-1");
  EXPECT_EQ(got->header("streams-forwarded-to"), "inst-2");

  rapidjson::Document record = firstRecord(log_);
  EXPECT_EQ(field(record, "status"), "204");
  EXPECT_EQ(field(record, "upstream"), "inst-2");
  EXPECT_EQ(field(record, "forward"), "forwarded");
  EXPECT_EQ(field(record, "owner"), "inst-2");
  EXPECT_EQ(field(record, "request_id"), "fwd-1");
}

TEST_F(ForwardIdentityTest, ARefusedOwnerIsNotLoggedAsTheOneThatAnswered) {
  startWithOwnerAt(unusedPort());
  Socket client = connectClient();
  ASSERT_TRUE(
      client.sendAll("POST /v1/stream/s1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
                     "\r\nx"));
  auto local = upstream_.waitForRequest();
  ASSERT_TRUE(local);
  ASSERT_TRUE(local->connection->sendAll(kConflict));
  auto got = readResponse(client, defaultDeadline());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 409);  // the local 409, unchanged
  EXPECT_EQ(got->header("x-request-id"), local->message.header("x-request-id"));

  rapidjson::Document record = firstRecord(log_);
  EXPECT_EQ(field(record, "status"), "409");
  EXPECT_EQ(field(record, "upstream"), "local");
  EXPECT_EQ(field(record, "forward"), "refused");
  EXPECT_EQ(field(record, "owner"), "inst-2");
}

TEST_F(ForwardIdentityTest, ASkippedForwardSaysWhy) {
  startWithOwnerAt(unusedPort());
  Socket client = connectClient();
  // Marked: a request that was already forwarded once is not forwarded again.
  ASSERT_TRUE(
      client.sendAll("POST /v1/stream/s1 HTTP/1.1\r\nHost: x\r\nStreams-Forwarded: inst-3"
                     "\r\nContent-Length: 1\r\n\r\nx"));
  auto local = upstream_.waitForRequest();
  ASSERT_TRUE(local);
  ASSERT_TRUE(local->connection->sendAll(kConflict));
  auto got = readResponse(client, defaultDeadline());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 409);
  rapidjson::Document record = firstRecord(log_);
  EXPECT_EQ(field(record, "upstream"), "local");
  EXPECT_EQ(field(record, "forward"), "skipped");
  EXPECT_EQ(field(record, "forward_reason"), "marked");
  EXPECT_EQ(field(record, "owner"), "inst-2");
}

}  // namespace
}  // namespace ferry::itest
