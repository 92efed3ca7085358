// Streaming and flow control through the real ferry process: responses pass chunk by chunk
// without waiting for their end, a slow side pauses the fast side (watermarks) and ferry's
// memory stays bounded, and either side leaving mid-response ends the other.

#include <atomic>
#include <cstdlib>

#include "tests/integration/proxy/support/proxy_test_base.h"
#include "tests/support/sanitizers.h"

namespace ferry::itest {
namespace {

using StreamingTest = ProxyTest;

// Reads from `client` until `needle` has arrived; false at the deadline.
bool receivedWithin(Socket& client, std::string_view needle, Deadline deadline) {
  while (client.buffered().find(needle) == std::string::npos) {
    if (!client.readMore(deadline)) return false;
  }
  return true;
}

TEST_F(StreamingTest, ChunkedResponseFirstChunkArrivesBeforeTheRestIsSent) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/feed")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nfirst!\r\n"));
  // The upstream sends nothing more until the client has seen the first chunk.
  ASSERT_TRUE(receivedWithin(client, "first!", defaultDeadline()))
      << "first chunk held back; got: " << client.buffered();
  ASSERT_TRUE(request->connection->sendAll("4\r\nrest\r\n0\r\n\r\n"));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "first!rest");
}

TEST_F(StreamingTest, CloseDelimitedResponseStreamsAndEnds) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/feed")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nearly"));
  ASSERT_TRUE(receivedWithin(client, "early", defaultDeadline()))
      << "close-delimited body held back; got: " << client.buffered();
  ASSERT_TRUE(request->connection->sendAll("-late"));
  request->connection->close();
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response) << client.buffered();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "early-late");
}

TEST_F(StreamingTest, ServerSentEventsPassOneByOne) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(
      client.sendAll("GET /events HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n"));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->connection->sendAll(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
      "Transfer-Encoding: chunked\r\n\r\n"));
  auto head = readHead(client, defaultDeadline(), false);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->header("content-type"), "text/event-stream");
  for (int i = 0; i < 5; ++i) {
    std::string event = "id: " + std::to_string(i) + "\ndata: tick " + std::to_string(i) + "\n\n";
    char size[16];
    std::snprintf(size, sizeof(size), "%zx\r\n", event.size());
    ASSERT_TRUE(request->connection->sendAll(size + event + "\r\n"));
    // Each event reaches the client before the next one is sent.
    ASSERT_TRUE(receivedWithin(client, event, defaultDeadline())) << "event " << i << " held";
  }
  ASSERT_TRUE(request->connection->sendAll("0\r\n\r\n"));
  ASSERT_TRUE(receivedWithin(client, "0\r\n\r\n", defaultDeadline()));
}

constexpr long kRssLimitKiB = 64 * 1024;

// FERRY_ITEST_FLOW_MIB shrinks the flow-control transfers for a quick local run.
uint64_t transferBytes(uint64_t default_mib) {
  const char* env = std::getenv("FERRY_ITEST_FLOW_MIB");
  uint64_t mib = env != nullptr ? std::strtoull(env, nullptr, 10) : default_mib;
  return (mib == 0 ? default_mib : mib) * 1024 * 1024;
}

TEST_F(StreamingTest, SlowClientPausesUpstreamAndMemoryStaysBounded) {
  startFerry();
  const uint64_t total = transferBytes(1024);  // 1 GiB
  const std::string block = binaryBody(1024 * 1024);
  Socket client = connectClient();
  client.setReceiveBuffer(64 * 1024);
  ASSERT_TRUE(client.sendAll(simpleGet("/big")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  Socket* up = request->connection;
  std::atomic<bool> upstream_ok{false};
  TestThread writer([&] {
    if (!up->sendAll("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(total) + "\r\n\r\n",
                     deadlineIn(std::chrono::seconds(120)))) {
      return;
    }
    for (uint64_t sent = 0; sent < total; sent += block.size()) {
      if (!up->sendAll(block, deadlineIn(std::chrono::seconds(120)))) return;
    }
    upstream_ok = true;
  });
  auto head = readHead(client, defaultDeadline(), false);
  ASSERT_TRUE(head);
  ASSERT_EQ(head->header("content-length"), std::to_string(total));
  auto first = client.readExactly(64 * 1024, defaultDeadline());
  ASSERT_TRUE(first);
  // The client stops reading: ferry must pause reading the upstream.
  ASSERT_TRUE(ferry_->waitForStat("ferry_watermark_pauses_total{paused=\"upstream_read\"}", 1))
      << "ferry never paused the upstream";
  // Bytes read past the first 64 KiB stay buffered: count them before reading on.
  uint64_t received = first->size() + client.buffered().size();
  bool pattern_ok = *first == block.substr(0, first->size());
  Deadline deadline = deadlineIn(std::chrono::seconds(120));
  while (received < total) {
    client.buffered().clear();
    if (!client.readMore(deadline, 1024 * 1024)) break;
    received += client.buffered().size();
  }
  // The last bytes are the last block's tail.
  if (received == total && !client.buffered().empty()) {
    const std::string& tail = client.buffered();
    pattern_ok = pattern_ok && tail == block.substr(block.size() - tail.size());
  }
  writer.join();
  EXPECT_TRUE(upstream_ok);
  EXPECT_EQ(received, total);
  EXPECT_TRUE(pattern_ok);
  long peak = ferry_->peakRssKiB();
  std::printf("[ RSS      ] 1 GiB download to a slow client: ferry VmHWM = %ld KiB\n", peak);
  RecordProperty("ferry_vmhwm_kib", std::to_string(peak));
  EXPECT_GT(peak, 0);
  if (kMemoryInflatedBySanitizer) GTEST_SKIP() << kSanitizerSkipReason;
  EXPECT_LT(peak, kRssLimitKiB);
}

TEST_F(StreamingTest, FastUploadToSlowUpstreamPausesClientAndMemoryStaysBounded) {
  startFerry();
  const uint64_t total = transferBytes(256);
  const std::string block = binaryBody(1024 * 1024);
  Socket client = connectClient();
  std::atomic<bool> client_ok{false};
  TestThread uploader([&] {
    Deadline deadline = deadlineIn(std::chrono::seconds(120));
    if (!client.sendAll("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: " +
                            std::to_string(total) + "\r\n\r\n",
                        deadline)) {
      return;
    }
    for (uint64_t sent = 0; sent < total; sent += block.size()) {
      if (!client.sendAll(block, deadline)) return;
    }
    client_ok = true;
  });
  Socket* up = upstream_.waitForConnection();
  ASSERT_NE(up, nullptr);
  up->setReceiveBuffer(64 * 1024);
  auto head = readHead(*up, defaultDeadline(), true);
  ASSERT_TRUE(head);
  ASSERT_EQ(head->header("content-length"), std::to_string(total));
  // The upstream reads a little, then stops: ferry must stop reading the client.
  auto first = up->readExactly(64 * 1024, defaultDeadline());
  ASSERT_TRUE(first);
  ASSERT_TRUE(ferry_->waitForStat("ferry_watermark_pauses_total{paused=\"downstream_read\"}", 1))
      << "ferry never paused the client";
  uint64_t received = first->size() + up->buffered().size();
  bool pattern_ok = *first == block.substr(0, first->size());
  Deadline deadline = deadlineIn(std::chrono::seconds(120));
  while (received < total) {
    up->buffered().clear();
    if (!up->readMore(deadline, 1024 * 1024)) break;
    received += up->buffered().size();
  }
  EXPECT_EQ(received, total);
  EXPECT_TRUE(pattern_ok);
  uploader.join();
  EXPECT_TRUE(client_ok);
  ASSERT_TRUE(up->sendAll(okResponse("stored")));
  auto response = readResponse(client, defaultDeadline());
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "stored");
  long peak = ferry_->peakRssKiB();
  std::printf("[ RSS      ] 256 MiB upload to a slow upstream: ferry VmHWM = %ld KiB\n", peak);
  RecordProperty("ferry_vmhwm_kib", std::to_string(peak));
  EXPECT_GT(peak, 0);
  if (kMemoryInflatedBySanitizer) GTEST_SKIP() << kSanitizerSkipReason;
  EXPECT_LT(peak, kRssLimitKiB);
}

TEST_F(StreamingTest, ClientLeavingMidResponseClosesUpstreamConnection) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/long")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  int64_t resets = ferry_->stat("ferry_downstream_resets_total");
  ASSERT_TRUE(
      request->connection->sendAll("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n0123456789"));
  ASSERT_TRUE(receivedWithin(client, "0123456789", defaultDeadline()));
  client.close();
  EXPECT_TRUE(request->connection->waitForClose(defaultDeadline()))
      << "ferry kept the upstream connection after the client left";
  EXPECT_TRUE(ferry_->waitForStat("ferry_downstream_resets_total", resets + 1));
}

TEST_F(StreamingTest, UpstreamDyingMidResponseCutsClientResponse) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/long")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  int64_t cut = ferry_->stat("ferry_responses_cut_total");
  ASSERT_TRUE(
      request->connection->sendAll("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n0123456789"));
  ASSERT_TRUE(receivedWithin(client, "0123456789", defaultDeadline()));
  request->connection->close();
  auto rest = client.readToEof(defaultDeadline());
  ASSERT_TRUE(rest) << "ferry kept the client connection open after the cut";
  auto head_end = rest->find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  EXPECT_LT(rest->size() - head_end - 4, 100000u) << "the client got a complete body";
  EXPECT_TRUE(ferry_->waitForStat("ferry_responses_cut_total", cut + 1));
}

TEST_F(StreamingTest, UpstreamDyingMidChunkedResponseLeavesNoLastChunk) {
  startFerry();
  Socket client = connectClient();
  ASSERT_TRUE(client.sendAll(simpleGet("/long")));
  auto request = upstream_.waitForRequest();
  ASSERT_TRUE(request);
  int64_t cut = ferry_->stat("ferry_responses_cut_total");
  ASSERT_TRUE(request->connection->sendAll(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"));
  ASSERT_TRUE(receivedWithin(client, "hello", defaultDeadline()));
  request->connection->close();
  auto rest = client.readToEof(defaultDeadline());
  ASSERT_TRUE(rest) << "ferry kept the client connection open after the cut";
  EXPECT_EQ(rest->find("0\r\n\r\n"), std::string::npos) << "a cut response looked complete";
  EXPECT_TRUE(ferry_->waitForStat("ferry_responses_cut_total", cut + 1));
}

}  // namespace
}  // namespace ferry::itest
