// The access log: one line per finished request, with the outcome, written by the workers.

#include <unistd.h>

#include <fstream>
#include <sstream>

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

// Polls the log until it holds `needle` (the worker writes after the response is sent).
bool waitForLine(const std::string& path, const std::string& needle) {
  for (Deadline deadline = defaultDeadline(); std::chrono::steady_clock::now() < deadline;) {
    if (readFile(path).find(needle) != std::string::npos) return true;
    std::this_thread::yield();
  }
  return false;
}

TEST_F(AccessLogTest, EachFinishedRequestGetsOneLineWithItsOutcome) {
  std::string log = writeTempFile("", ".log");
  FerryConfigParams params;
  params.access_log = log;
  startFerry(params);
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll("POST /v1/stream/logged HTTP/1.1\r\nHost: x\r\n"
                             "Content-Length: 5\r\n\r\nhello"));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll(okResponse("abc")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_TRUE(waitForLine(log, "\"POST /v1/stream/logged\" 200 req=5 resp=3 "))
      << readFile(log);
  std::string text = readFile(log);
  EXPECT_NE(text.find("upstream=local end=ok\n"), std::string::npos) << text;

  // A client that leaves mid-response is logged as such.
  Socket leaver = connectClient();
  ASSERT_TRUE(leaver.sendAll(simpleGet("/left")));
  auto second = upstream_.waitForRequest();
  ASSERT_TRUE(second);
  ASSERT_TRUE(second->connection->sendAll("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhal"));
  ASSERT_TRUE(readHead(leaver, defaultDeadline(), false));
  leaver.close();
  EXPECT_TRUE(waitForLine(log, "\"GET /left\" 200 ")) << readFile(log);
  EXPECT_NE(readFile(log).find("end=client_left"), std::string::npos) << readFile(log);
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
