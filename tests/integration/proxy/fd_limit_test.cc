// Issue #10, finding 4: at the file-descriptor limit, accept() fails while the client stays
// queued, so the listening socket stays readable. ferry must pause accepting for a short
// backoff (counted, logged at most once per interval) instead of spinning and flooding stderr,
// and serve new clients and /stats again once descriptors are free. At start it raises its
// soft RLIMIT_NOFILE to the hard limit and says when limits.max_connections cannot fit.
//
// ferry runs under prlimit(1), which sets the limits and execs it (same pid).

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

constexpr const char* kPrlimit = "/usr/bin/prlimit";

class FdLimitTest : public ProxyTest {
 protected:
  void startLimited(const std::string& nofile, FerryConfigParams params = {}) {
    if (::access(kPrlimit, X_OK) != 0) GTEST_SKIP() << "no " << kPrlimit << " (util-linux)";
    params.upstream_port = upstream_.port();
    std::string error;
    ferry_ =
        FerryProcess::start(renderConfig(params), &error, {kPrlimit, "--nofile=" + nofile, "--"});
    ASSERT_NE(ferry_, nullptr) << error;
  }

  size_t openDescriptors() const {
    size_t n = 0;
    DIR* dir = ::opendir(("/proc/" + std::to_string(ferry_->pid()) + "/fd").c_str());
    if (dir == nullptr) return 0;
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(dir);
    return n;
  }

  // One request through ferry, then both of its connections closed, with descriptors to spare.
  // Under UBSan this is what lets ferry live through the limit: the first time the vptr check
  // meets a (dynamic type, static type) pair, its runtime (LLVM 14, IsAccessibleMemoryRange)
  // writes the vtable into a pipe(2) to see that it is readable. With no descriptor free,
  // pipe() fails and a live object is reported as "invalid vptr" (the checks are fatal: ferry
  // dies). Closes are the first calls through ConnectionCallbacks that ferry makes at the
  // limit, so their paths are met here first: a downstream connection closed by its client,
  // an upstream one closed after a "Connection: close" response.
  void serveOneRequestAndClose(const std::string& path) {
    Socket client = Socket::connectTo(ferry_->port());
    ASSERT_TRUE(client.valid());
    ASSERT_TRUE(client.sendAll(simpleGet(path)));
    auto request = upstream_.waitForRequest();
    ASSERT_TRUE(request) << "not served before the limit";
    ASSERT_TRUE(request->connection->sendAll(
        "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nbefore"));
    auto response = readResponse(client, defaultDeadline());
    ASSERT_TRUE(response);
    EXPECT_EQ(response->body, "before");
    EXPECT_TRUE(request->connection->waitForClose(defaultDeadline()))
        << "ferry kept the upstream connection after Connection: close";
    client.close();
    const Deadline closed = defaultDeadline();
    while (ferry_->stat("ferry_downstream_connections_active") != 0 && Clock::now() < closed) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // condition poll
    }
    ASSERT_EQ(ferry_->stat("ferry_downstream_connections_active"), 0);
  }

  std::string limitsLine() const {
    std::ifstream in("/proc/" + std::to_string(ferry_->pid()) + "/limits");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("Max open files", 0) == 0) return line;
    }
    return "";
  }
};

TEST_F(FdLimitTest, AtTheDescriptorLimitAcceptBacksOffAndRecovers) {
  constexpr size_t kLimit = 64;
  FerryConfigParams params;
  params.max_connections = 100;  // cannot fit in 64 descriptors: ferry says so at start
  params.request_head = "60s";   // the idle clients below must stay open
  params.keepalive_idle = "60s";
  startLimited(std::to_string(kLimit) + ":" + std::to_string(kLimit), params);
  if (ferry_ == nullptr) return;
  EXPECT_NE(ferry_->stderrText().find("limits.max_connections is 100"), std::string::npos)
      << ferry_->stderrText();
  serveOneRequestAndClose("/before-the-limit");
  if (HasFatalFailure()) return;

  // More clients than descriptors: the kernel queues what ferry cannot accept.
  std::vector<Socket> clients;
  for (size_t i = 0; i < kLimit + 16; ++i) {
    clients.push_back(Socket::connectTo(ferry_->port()));
    ASSERT_TRUE(clients.back().valid()) << i;
  }
  const Deadline full = defaultDeadline();
  while (openDescriptors() < kLimit && Clock::now() < full) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // condition poll
  }
  ASSERT_GE(openDescriptors(), kLimit) << "ferry never reached its descriptor limit";

  // At the limit for a second: ferry must idle, not spin in accept(), and not flood stderr.
  const double cpu_before = ferry_->cpuSeconds();
  const auto window_start = Clock::now();
  const Deadline window_end = deadlineIn(std::chrono::milliseconds(1000));
  while (Clock::now() < window_end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // observation window
  }
  const double cpu = ferry_->cpuSeconds() - cpu_before;
  const double seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
  const double core_share = cpu / seconds;
  EXPECT_LT(core_share, 0.1) << "ferry used " << core_share * 100
                             << "% of a core while at its descriptor limit";
  const std::string err = ferry_->stderrText();
  EXPECT_LT(err.size(), 4096u) << "stderr grew to " << err.size() << " bytes";
  EXPECT_NE(err.find("Too many open files"), std::string::npos) << err;

  // Free the descriptors: new clients and /stats are served again.
  clients.clear();
  Socket client = Socket::connectTo(ferry_->port());
  ASSERT_TRUE(client.valid());
  ASSERT_TRUE(client.sendAll(simpleGet("/after-the-limit")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request) << "a new client was not served after descriptors were freed";
  EXPECT_EQ(request->message.path, "/after-the-limit");
  ASSERT_TRUE(request->connection->sendAll(okResponse("back")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "back");
  EXPECT_GE(ferry_->stat(R"(ferry_accept_backoffs_total{listener="data"})"), 1);
}

TEST_F(FdLimitTest, SoftLimitIsRaisedToTheHardLimitAtStart) {
  startLimited("64:4096");
  if (ferry_ == nullptr) return;
  const std::string line = limitsLine();
  std::istringstream fields(line.substr(std::string("Max open files").size()));
  std::string soft, hard;
  fields >> soft >> hard;
  EXPECT_EQ(soft, "4096") << line;
  EXPECT_EQ(hard, "4096") << line;
  EXPECT_EQ(ferry_->stderrText().find("limits.max_connections"), std::string::npos)
      << "100 connections fit in 4096 descriptors: " << ferry_->stderrText();
}

}  // namespace
}  // namespace ferry::itest
