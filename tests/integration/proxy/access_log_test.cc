// The access log: one JSON object (or text line) per finished request, with its outcome,
// written by the workers; requests the codec refused are logged too.

#include <rapidjson/document.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

using AccessLogTest = ProxyTest;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Polls the log until it holds `count` lines (the worker writes after the response is sent).
std::vector<std::string> waitForLines(const std::string& path, size_t count) {
  for (Deadline deadline = defaultDeadline(); std::chrono::steady_clock::now() < deadline;) {
    auto got = lines(readFile(path));
    if (got.size() >= count) return got;
    std::this_thread::yield();
  }
  return lines(readFile(path));
}

// One record, parsed; every field is checked against what the test sent.
struct Record {
  rapidjson::Document doc;
  std::string str(const char* key) const {
    auto it = doc.FindMember(key);
    if (it == doc.MemberEnd() || !it->value.IsString()) return "<absent or not a string>";
    return it->value.GetString();
  }
  bool isNull(const char* key) const {
    auto it = doc.FindMember(key);
    return it != doc.MemberEnd() && it->value.IsNull();
  }
  int64_t num(const char* key) const {
    auto it = doc.FindMember(key);
    return it != doc.MemberEnd() && it->value.IsInt64() ? it->value.GetInt64() : -1;
  }
  bool hasNumber(const char* key) const {
    auto it = doc.FindMember(key);
    return it != doc.MemberEnd() && it->value.IsNumber();
  }
};

std::unique_ptr<Record> parseRecord(const std::string& line) {
  auto r = std::make_unique<Record>();
  r->doc.Parse(line.c_str(), line.size());
  EXPECT_FALSE(r->doc.HasParseError()) << line;
  EXPECT_TRUE(r->doc.IsObject()) << line;
  if (r->doc.HasParseError() || !r->doc.IsObject()) r->doc.SetObject();
  return r;
}

TEST_F(AccessLogTest, EachFinishedRequestGetsOneJsonRecordWithItsOutcome) {
  std::string log = writeTempFile("", ".log");
  FerryConfigParams params;
  params.access_log = log;  // the first form, `access_log: PATH`: json by default
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(
      client.sendAll("POST /v1/stream/logged?x=1 HTTP/1.1\r\nHost: x\r\n"
                     "User-Agent: test-agent/1.0\r\nX-Request-Id: req-123\r\n"
                     "Content-Length: 5\r\n\r\nhello"));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll(okResponse("abc")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  auto got = waitForLines(log, 1);
  ASSERT_EQ(got.size(), 1u) << readFile(log);
  auto r = parseRecord(got[0]);
  EXPECT_EQ(r->str("method"), "POST");
  EXPECT_EQ(r->str("path"), "/v1/stream/logged?x=1");
  EXPECT_EQ(r->str("protocol"), "HTTP/1.1");
  EXPECT_EQ(r->num("status"), 200);
  EXPECT_EQ(r->num("bytes_in"), 5);
  EXPECT_EQ(r->num("bytes_out"), 3);
  EXPECT_EQ(r->str("request_id"), "req-123");
  EXPECT_EQ(r->str("user_agent"), "test-agent/1.0");
  EXPECT_EQ(r->str("upstream"), "local");
  EXPECT_EQ(r->str("forward"), "none");
  EXPECT_TRUE(r->isNull("owner"));
  EXPECT_EQ(r->str("end"), "ok");
  EXPECT_EQ(r->str("client").rfind("127.0.0.1:", 0), 0u) << r->str("client");
  EXPECT_TRUE(r->hasNumber("duration_ms"));
  EXPECT_TRUE(r->hasNumber("upstream_ttfb_ms"));
  EXPECT_EQ(r->str("start").size(), 24u) << r->str("start");  // 2026-11-29T18:40:01.123Z

  // A client that leaves mid-response is logged as such.
  Socket leaver = connectClient();
  ASSERT_TRUE(leaver.sendAll(simpleGet("/left")));
  auto second = upstream_.waitForRequest();
  ASSERT_TRUE(second);
  ASSERT_TRUE(second->connection->sendAll("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhal"));
  ASSERT_TRUE(readHead(leaver, defaultDeadline(), false));
  leaver.close();
  got = waitForLines(log, 2);
  ASSERT_EQ(got.size(), 2u) << readFile(log);
  auto left = parseRecord(got[1]);
  EXPECT_EQ(left->str("path"), "/left");
  EXPECT_EQ(left->num("status"), 200);
  EXPECT_EQ(left->str("end"), "client_left");
  ::unlink(log.c_str());
}

TEST_F(AccessLogTest, QuotesAndControlBytesCannotForgeFields) {
  std::string log = writeTempFile("", ".log");
  FerryConfigParams params;
  params.access_log = log;
  params.access_log_format = "json";  // the second form, `access_log: {path, format}`
  startFerry(params);
  // A '"' in the target and a user-agent that tries to close the string and add fields.
  const std::string agent = "x\", \"status\": 999, \"end\": \"forged\\";
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll("GET /a\"b HTTP/1.1\r\nHost: x\r\nUser-Agent: " + agent + "\r\n\r\n"));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll(okResponse("")));
  ASSERT_TRUE(readResponse(client, defaultDeadline()));
  auto got = waitForLines(log, 1);
  ASSERT_EQ(got.size(), 1u) << readFile(log);
  auto r = parseRecord(got[0]);
  EXPECT_EQ(r->str("path"), "/a\"b");
  EXPECT_EQ(r->str("user_agent"), agent);
  EXPECT_EQ(r->num("status"), 200);
  EXPECT_EQ(r->str("end"), "ok");
  ::unlink(log.c_str());
}

TEST_F(AccessLogTest, RequestsTheCodecRefusesAreLogged) {
  std::string log = writeTempFile("", ".log");
  FerryConfigParams params;
  params.access_log = log;
  params.max_request_headers = 5;
  params.request_head = "300ms";
  startFerry(params);
  struct Case {
    std::string bytes;
    int status;
  };
  std::vector<Case> cases = {
      {"GET / HTTP/1.1\r\n\r\n", 400},              // no Host
      {"BREW / HTTP/1.1\r\nHost: x\r\n\r\n", 501},  // unknown method
      {"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\nE: 1\r\n\r\n", 431},
      {"GET / HTTP/1.1\r\nHost: x\r\n", 408},  // the head never ends
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Socket client = connectClient();
    ASSERT_TRUE(client.sendAll(cases[i].bytes));
    auto response = readResponse(client, defaultDeadline());
    ASSERT_TRUE(response) << i;
    EXPECT_EQ(response->status, cases[i].status) << i;
    auto got = waitForLines(log, i + 1);
    ASSERT_EQ(got.size(), i + 1) << readFile(log);
    auto r = parseRecord(got[i]);
    EXPECT_EQ(r->num("status"), cases[i].status) << got[i];
    EXPECT_EQ(r->str("end"), "refused") << got[i];
    EXPECT_NE(r->str("error"), "<absent or not a string>") << got[i];
    EXPECT_TRUE(r->isNull("upstream")) << got[i];
    EXPECT_EQ(r->str("client").rfind("127.0.0.1:", 0), 0u) << got[i];
  }
  ::unlink(log.c_str());
}

TEST_F(AccessLogTest, TextFormatQuotesStringsOnOneLine) {
  std::string log = writeTempFile("", ".log");
  FerryConfigParams params;
  params.access_log = log;
  params.access_log_format = "text";
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll("GET /t HTTP/1.1\r\nHost: x\r\nUser-Agent: a\"b\r\n\r\n"));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll(okResponse("xy")));
  ASSERT_TRUE(readResponse(client, defaultDeadline()));
  auto got = waitForLines(log, 1);
  ASSERT_EQ(got.size(), 1u) << readFile(log);
  EXPECT_NE(got[0].find("method=\"GET\" path=\"/t\" protocol=\"HTTP/1.1\" status=200 "
                        "bytes_in=0 bytes_out=2 "),
            std::string::npos)
      << got[0];
  EXPECT_NE(got[0].find("user_agent=\"a\\\"b\""), std::string::npos) << got[0];
  // "fault" (fault injection's, null: none) comes before owner forwarding's fields.
  EXPECT_NE(got[0].find("upstream=\"local\" fault=- forward=\"none\" owner=- end=\"ok\""),
            std::string::npos)
      << got[0];
  ::unlink(log.c_str());
}

TEST_F(AccessLogTest, UnwritableAccessLogStopsTheStartWithTheReason) {
  FerryConfigParams params;
  params.upstream_port = upstream_.port();
  params.access_log = "/nonexistent-dir/ferry.log";
  std::string path = writeTempFile(renderConfig(params));
  CommandResult result = runFerry({"--config", path});
  ::unlink(path.c_str());
  EXPECT_EQ(result.exit_code, 1) << result.out;
  EXPECT_NE(result.out.find("access_log: cannot open /nonexistent-dir/ferry.log"),
            std::string::npos)
      << result.out;
}

}  // namespace
}  // namespace ferry::itest
