// /stats beyond the counters: every request in the duration histogram and in
// ferry_requests_completed_total{method,class}, the build, and the process metrics under the
// names Prometheus client libraries use.

#include <openssl/crypto.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

// The text of /proc/<pid>/maps: which files (shared libraries among them) a process maps.
std::string mappedFilesOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

using MetricsTest = ProxyTest;

TEST_F(MetricsTest, EveryRequestCountsByMethodAndClassAndInTheHistogram) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/a")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll(okResponse("ok")));
  ASSERT_TRUE(readResponse(client, defaultDeadline()));
  ASSERT_TRUE(client.sendAll("DELETE /b HTTP/1.1\r\nHost: x\r\n\r\n"));
  request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"));
  ASSERT_TRUE(readResponse(client, defaultDeadline()));
  Socket bad = connectClient();  // refused by the codec: no method known
  ASSERT_TRUE(bad.sendAll("GET / HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(readResponse(bad, defaultDeadline()));

  EXPECT_TRUE(
      ferry_->waitForStat("ferry_requests_completed_total{method=\"none\",class=\"4xx\"}", 1));
  EXPECT_EQ(ferry_->stat("ferry_requests_completed_total{method=\"GET\",class=\"2xx\"}"), 1);
  EXPECT_EQ(ferry_->stat("ferry_requests_completed_total{method=\"DELETE\",class=\"4xx\"}"), 1);
  EXPECT_EQ(ferry_->stat("ferry_requests_completed_total{method=\"POST\",class=\"2xx\"}"), 0);
  EXPECT_EQ(ferry_->stat("ferry_request_duration_seconds_count"), 3);
  EXPECT_EQ(ferry_->stat("ferry_request_duration_seconds_bucket{le=\"+Inf\"}"), 3);
}

TEST_F(MetricsTest, BuildInfoAndProcessMetrics) {
  startFerry();
  auto text = ferry_->adminGet("/stats");
  ASSERT_TRUE(text);
  // The allocator label names the malloc that really serves the process: mimalloc's library
  // is mapped into ferry exactly when the label says so.
  const std::string maps = mappedFilesOf(ferry_->pid());
  ASSERT_FALSE(maps.empty());
  // The flavor label says which build this is (plain, or release-pgo from
  // scripts/build-release.sh): the one this test tree was configured with.
  // The tls label names the OpenSSL ferry runs with: the one this test links (the same shared
  // library, or the same archive when FERRY_STATIC_DEPS links it in).
  const std::string tls_and_flavor = std::string(",tls=\"") + OpenSSL_version(OPENSSL_VERSION) +
                                     "\",flavor=\"" + FERRY_EXPECT_FLAVOR + "\"} 1\n";
#ifdef FERRY_EXPECT_MIMALLOC
  const std::string prefix = "ferry_build_info{version=\"0.1.0\",allocator=\"mimalloc 2.";
  auto at = text->find(prefix);
  ASSERT_NE(at, std::string::npos) << *text;
  EXPECT_NE(text->find(tls_and_flavor, at), std::string::npos) << *text;
  EXPECT_EQ(text->find('\n', at), text->find(tls_and_flavor, at) + tls_and_flavor.size() - 1)
      << *text;
  EXPECT_NE(maps.find("libmimalloc"), std::string::npos);
#else
  EXPECT_NE(text->find("ferry_build_info{version=\"0.1.0\",allocator=\"system\"" + tls_and_flavor),
            std::string::npos)
      << *text;
  EXPECT_EQ(maps.find("libmimalloc"), std::string::npos);
#endif
  for (const char* family :
       {"process_cpu_seconds_total counter", "process_resident_memory_bytes gauge",
        "process_open_fds gauge", "process_max_fds gauge", "process_start_time_seconds gauge"}) {
    EXPECT_NE(text->find(std::string("# TYPE ") + family + "\n"), std::string::npos) << family;
  }
  // Values that can be checked from outside: ferry's own /proc entries.
  const int64_t rss = ferry_->stat("process_resident_memory_bytes");
  EXPECT_GT(rss, 1'000'000);
  const int64_t fds = ferry_->stat("process_open_fds");
  EXPECT_GE(fds, 4);  // stdio, listener, admin listener at least
  EXPECT_LT(fds, 200);
  // Start time: within a minute before now (the test just started it).
  auto pos = text->find("\nprocess_start_time_seconds ");
  ASSERT_NE(pos, std::string::npos);
  const double start = std::stod(text->substr(pos + 28));
  const double now = static_cast<double>(::time(nullptr));
  EXPECT_LE(start, now + 1);
  EXPECT_GT(start, now - 60);
}

// Which shared libraries ferry maps follows the build's link options (root CMakeLists.txt):
// FERRY_STATIC_CXX_RUNTIME puts the C++ runtime and yaml-cpp inside the binary,
// FERRY_STATIC_DEPS (the release build) libevent, nghttp2 and OpenSSL. A library linked in is
// not mapped; one left shared is (the first check would pass on any process otherwise).
TEST_F(MetricsTest, SharedLibrariesAreMappedOnlyWhenNotLinkedIn) {
#ifdef FERRY_EXPECT_STATIC_CXX_RUNTIME
  constexpr bool kCxxRuntimeLinkedIn = true;
#else
  constexpr bool kCxxRuntimeLinkedIn = false;
#endif
#ifdef FERRY_EXPECT_STATIC_DEPS
  constexpr bool kCLibrariesLinkedIn = true;
#else
  constexpr bool kCLibrariesLinkedIn = false;
#endif
  struct Expectation {
    const char* library;
    bool linked_in;
    bool mapped_when_shared;  // false: not checked when shared
  };
  const Expectation expectations[] = {
      {"libstdc++", kCxxRuntimeLinkedIn, true},   {"libgcc_s", kCxxRuntimeLinkedIn, false},
      {"libyaml-cpp", kCxxRuntimeLinkedIn, true}, {"libcrypto.so", kCLibrariesLinkedIn, true},
      {"libssl.so", kCLibrariesLinkedIn, true},   {"libevent_core", kCLibrariesLinkedIn, true},
      {"libnghttp2", kCLibrariesLinkedIn, true},
  };
  startFerry();
  const std::string maps = mappedFilesOf(ferry_->pid());
  ASSERT_NE(maps.find("libc.so"), std::string::npos) << maps;  // the maps were read
  for (const Expectation& e : expectations) {
    if (e.linked_in) {
      EXPECT_EQ(maps.find(e.library), std::string::npos) << e.library << "\n" << maps;
    } else if (e.mapped_when_shared) {
      EXPECT_NE(maps.find(e.library), std::string::npos) << e.library << "\n" << maps;
    }
  }
}

TEST_F(MetricsTest, SeriesNamesCarryTheirUnit) {
  startFerry();
  auto text = ferry_->adminGet("/stats");
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("# TYPE ferry_downstream_received_bytes_total counter"), std::string::npos);
  EXPECT_NE(text->find("# TYPE ferry_downstream_sent_bytes_total counter"), std::string::npos);
  EXPECT_NE(text->find("# TYPE ferry_replay_held_bytes gauge"), std::string::npos);
  // Prometheus naming: the unit is the last word before _total; no "bytes_<verb>" left.
  EXPECT_EQ(text->find("_bytes_received"), std::string::npos);
  EXPECT_EQ(text->find("_bytes_sent"), std::string::npos);
  EXPECT_EQ(text->find("_bytes_held"), std::string::npos);
}

}  // namespace
}  // namespace ferry::itest
