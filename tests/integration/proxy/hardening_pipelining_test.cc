// Issue #10, finding 3: a client that pipelines many requests and reads nothing must not make
// ferry buffer every answer. ferry holds the next pipelined request while the client's write
// buffer is over its high watermark and takes it again below the low watermark; the answers
// still arrive complete and in order once the client reads.

#include <atomic>
#include <string>
#include <thread>

#include "tests/integration/proxy/support/proxy_test_base.h"
#include "tests/support/sanitizers.h"

namespace ferry::itest {
namespace {

using PipeliningTest = ProxyTest;

constexpr int kRequests = 8000;
constexpr size_t kBodyBytes = 8000;

std::string pathFor(int i) { return "/pipelined/" + std::to_string(i); }

// 8,000 bytes that start with the request's path, so order and integrity are both checked.
std::string bodyFor(const std::string& path) {
  std::string body = path + "\n";
  body.resize(kBodyBytes, 'x');
  return body;
}

TEST_F(PipeliningTest, ClientThatDoesNotReadHoldsTheNextRequestUntilItReads) {
  FerryConfigParams params;
  params.high_watermark = 16 * 1024;  // the smallest the config allows
  startFerry(params);
  const long rss_before = ferry_->peakRssKiB();
  ASSERT_GT(rss_before, 0);

  std::atomic<int> served{0};
  TestThread upstream([&] {
    for (int i = 0; i < kRequests; ++i) {
      // Long per-request deadline: the hold below lasts as long as the test looks at it.
      auto request = upstream_.waitForRequest(deadlineIn(std::chrono::seconds(60)));
      if (!request) return;
      if (!request->connection->sendAll(okResponse(bodyFor(request->message.path)))) return;
      served.fetch_add(1);
    }
  });

  Socket client = connectClient();
  std::string pipelined;
  for (int i = 0; i < kRequests; ++i) pipelined += simpleGet(pathFor(i));
  // ferry reads at most a watermark ahead; the rest waits in the kernel's buffers, so the
  // client writes from its own thread.
  std::atomic<bool> sent{false};
  TestThread writer(
      [&] { sent = client.sendAll(pipelined, deadlineIn(std::chrono::seconds(30))); });

  // ferry holds the next request once the answers it could not write pass the watermark.
  ASSERT_TRUE(ferry_->waitForStat(R"(ferry_watermark_pauses_total{paused="next_request"})", 1))
      << "ferry never held a pipelined request; served " << served.load();
  const int served_at_hold = served.load();
  // What ferry took is bounded by the kernel's socket buffers plus one watermark, not by
  // what the client sent. Watch a window: nothing more may be taken while the client is silent.
  const Deadline window_end = deadlineIn(std::chrono::milliseconds(500));
  while (Clock::now() < window_end && served.load() == served_at_hold) {
    // Observation window, not synchronisation: the assertion is that nothing changes in it.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const int served_while_silent = served.load();
  EXPECT_LE(served_while_silent, served_at_hold + 1)
      << "ferry kept taking requests while the client read nothing";
  EXPECT_LT(served_while_silent, kRequests / 2)
      << "ferry served " << served_while_silent << " of " << kRequests
      << " requests before the client read a byte";
  const long rss_held = ferry_->peakRssKiB();
  // Under AddressSanitizer freed memory sits in quarantine: RSS says nothing there.
  if (!kMemoryInflatedBySanitizer) {
    EXPECT_LT(rss_held - rss_before, 24 * 1024)
        << "peak RSS grew by " << (rss_held - rss_before) << " KiB while the client did not read";
  }

  // The client reads now: every answer arrives, complete and in order.
  for (int i = 0; i < kRequests; ++i) {
    auto response = readResponse(client, deadlineIn(std::chrono::seconds(10)));
    ASSERT_TRUE(response) << "response " << i << " missing; served " << served.load()
                          << "; buffered " << client.buffered().size() << "\n"
                          << ferry_->adminGet("/stats").value_or("no stats");
    ASSERT_EQ(response->status, 200) << "response " << i;
    ASSERT_EQ(response->body, bodyFor(pathFor(i))) << "response " << i << " out of order";
  }
  writer.join();
  EXPECT_TRUE(sent.load());
  upstream.join();
  EXPECT_EQ(served.load(), kRequests);
}

}  // namespace
}  // namespace ferry::itest
