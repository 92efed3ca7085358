// Process life: drain on SIGTERM, the downstream connection cap, and the command line
// (--validate, --version, --help).

#include <openssl/crypto.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

using LifecycleTest = ProxyTest;

TEST_F(LifecycleTest, SigtermDrainsInFlightResponseClosesIdleRefusesNewAndExitsZero) {
  startFerry();
  // An idle keep-alive connection.
  Socket idle = connectClient();
  ASSERT_TRUE(idle.sendAll(simpleGet("/warm")));
  auto warm = upstream_.waitForRequest();
  ASSERT_TRUE(warm);
  ASSERT_TRUE(warm->connection->sendAll(okResponse("warm")));
  ASSERT_TRUE(readResponse(idle, defaultDeadline()));
  // A slow response in flight.
  Socket busy = connectClient();
  ASSERT_TRUE(busy.sendAll(simpleGet("/slow")));
  auto slow = upstream_.waitForRequest();
  ASSERT_TRUE(slow);
  ASSERT_TRUE(slow->connection->sendAll("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf-"));
  auto head = readHead(busy, defaultDeadline(), false);
  ASSERT_TRUE(head);

  ferry_->signal(SIGTERM);
  EXPECT_TRUE(idle.waitForClose(defaultDeadline())) << "the idle keep-alive was not closed";
  EXPECT_TRUE(idle.buffered().empty()) << idle.buffered();
  // New connections are refused once the drain began (the listener is closed).
  int error = 0;
  Socket refused = Socket::connectTo(ferry_->port(), &error);
  EXPECT_FALSE(refused.valid()) << "a new connection was accepted during the drain";
  EXPECT_EQ(error, ECONNREFUSED);
  // The response in flight completes.
  ASSERT_TRUE(slow->connection->sendAll("done!"));
  auto body = busy.readExactly(10, defaultDeadline());
  ASSERT_TRUE(body);
  EXPECT_EQ(*body, "half-done!");
  EXPECT_TRUE(busy.waitForClose(defaultDeadline()));
  auto code = ferry_->waitExit(deadlineIn(std::chrono::seconds(10)));
  ASSERT_TRUE(code) << "ferry did not exit after the drain";
  EXPECT_EQ(*code, 0);
}

TEST_F(LifecycleTest, ConnectionOverMaxConnectionsGets503WithRetryAfter) {
  FerryConfigParams params;
  params.max_connections = 2;
  startFerry(params);
  Socket a = connectClient();
  Socket b = connectClient();
  ASSERT_TRUE(ferry_->waitForStat("ferry_downstream_connections_active", 2));
  Socket c = connectClient();
  ASSERT_TRUE(c.sendAll(simpleGet("/third")));
  auto response = readResponse(c, defaultDeadline());
  ASSERT_TRUE(response) << c.buffered();
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->header("retry-after"), "1");
  EXPECT_NE(response->body.find("\"error\""), std::string::npos);
  EXPECT_TRUE(c.waitForClose(defaultDeadline()));
  EXPECT_GE(ferry_->stat("ferry_downstream_connections_overflow_total"), 1);
  // The two admitted connections still work.
  ASSERT_TRUE(a.sendAll(simpleGet("/a")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll(okResponse("a")));
  auto ok = readResponse(a, defaultDeadline());
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(FerryCommandLineTest, ValidateAcceptsAValidConfig) {
  FerryConfigParams params;
  params.upstream_port = 8080;
  std::string path = writeTempFile(renderConfig(params));
  CommandResult result = runFerry({"--validate", "--config", path});
  ::unlink(path.c_str());
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_EQ(result.out, "OK\n");
}

TEST(FerryCommandLineTest, ValidateReportsEveryErrorWithItsKeyPath) {
  std::string path = writeTempFile(
      "instance_name: inst-1\n"
      "listener: {address: not-an-ip, port: 0}\n"
      "local_instance: {address: 127.0.0.1, port: 8080}\n"
      "limits: {max_connections: 0}\n"
      "forwarding: {enabled: false}\n");
  CommandResult result = runFerry({"--validate", "--config", path});
  ::unlink(path.c_str());
  EXPECT_EQ(result.exit_code, 1) << result.out;
  EXPECT_NE(result.out.find("listener.address: "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("limits.max_connections: "), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("OK"), std::string::npos) << result.out;
}

TEST(FerryCommandLineTest, ValidateRefusesAnAccessLogItCouldNotOpen) {
  FerryConfigParams params;
  params.upstream_port = 8080;
  params.access_log = "/nonexistent-ferry-dir/access.log";
  std::string path = writeTempFile(renderConfig(params));
  CommandResult bad = runFerry({"--validate", "--config", path});
  ::unlink(path.c_str());
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_EQ(bad.out.rfind("access_log: ", 0), 0u) << bad.out;
  EXPECT_NE(bad.out.find("/nonexistent-ferry-dir"), std::string::npos) << bad.out;

  // A file that does not exist yet in a writable directory is fine, and is not created.
  std::string dir = writeTempFile("");
  params.access_log = dir + ".log";
  path = writeTempFile(renderConfig(params));
  CommandResult good = runFerry({"--validate", "--config", path});
  ::unlink(path.c_str());
  ::unlink(dir.c_str());
  EXPECT_EQ(good.exit_code, 0) << good.out;
  EXPECT_NE(::access(params.access_log.c_str(), F_OK), 0) << "validate created the log";
}

TEST(FerryCommandLineTest, VersionAndHelpExitZero) {
  CommandResult version = runFerry({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("ferry ", 0), 0u) << version.out;
  // Which build answers: the OpenSSL it runs with (the one this test links: the same shared
  // library, or the same archive), the allocator, and the flavor this tree was configured with
  // (FERRY_BUILD_FLAVOR; release-pgo from scripts/build-release.sh).
  EXPECT_NE(
      version.out.find(std::string(" (tls: ") + OpenSSL_version(OPENSSL_VERSION) + ", allocator: "),
      std::string::npos)
      << version.out;
  EXPECT_NE(version.out.find(std::string(", build: ") + FERRY_EXPECT_FLAVOR + ")\n"),
            std::string::npos)
      << version.out;
  CommandResult help = runFerry({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--validate"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--config"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace ferry::itest
