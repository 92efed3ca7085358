// Long-polls through ferry (issue #22, docs/live-feeds.md "Long-polls"): a long-poll whose
// owner dies while it waits, or whose shard is moving when it arrives, is sent again within the
// client's wait and answered by the new owner; with live_feeds.share, identical long-polls
// waiting at once through one ferry are one upstream long-poll at the owner (its
// /v1/debug/requests counters), every client gets the data appended, and long-polls with
// different Authorization never share; product long-polls (records:long-poll) collapse too.
#include <rapidjson/document.h>
#include <signal.h>

#include <memory>
#include <vector>

#include "tests/integration/forwarding/live_feed_test.h"

namespace ferry::fwdtest {
namespace {

// Answers of `route` with `status` counted by member `i`'s emulator (not forwarded ones).
uint64_t answered(Emulator& emulator, const std::string& route, const std::string& status) {
  const std::string json = emulator.requests();
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("routes")) {
    ADD_FAILURE() << "not the emulator's counters: " << json;
    return 0;
  }
  const auto& routes = doc["routes"];
  if (!routes.HasMember(route.c_str())) return 0;
  const auto& by_status = routes[route.c_str()];
  return by_status.HasMember(status.c_str()) ? by_status[status.c_str()].GetUint64() : 0;
}

// Long-polls `ferry` sent again, whatever the cause (the owner's ferry's 502 or 503, a refused
// connection: which one depends on when the owner died).
int64_t resends(Ferry& ferry) {
  auto stats = ferry.admin("/stats");
  if (!stats.isOk()) {
    ADD_FAILURE() << stats.status().message();
    return 0;
  }
  constexpr std::string_view kFamily = "ferry_live_feed_long_poll_resends_total{";
  int64_t sum = 0;
  size_t at = 0;
  while ((at = stats->body.find(kFamily, at)) != std::string::npos) {
    const size_t value = stats->body.find("} ", at) + 2;
    sum += std::stoll(stats->body.substr(value, stats->body.find('\n', value) - value));
    at = value;
  }
  return sum;
}

// The live-feed fixture (its cell, movingStream(), copyStream(), inst2Left()) and the clients'
// long-polls.
class LongPollFixture : public LiveFeedFixture {
 protected:
  // Opens `n` clients on the entry ferry, each sending the long-poll `path` with `headers`.
  void sendLongPolls(std::vector<std::unique_ptr<CellClient>>& clients, size_t n,
                     const std::string& path, const Headers& headers = {}) {
    for (size_t i = 0; i < n; ++i) {
      clients.push_back(std::make_unique<CellClient>());
      ASSERT_TRUE(connectTo(*clients.back(), cell_->ferry(kEntry)).isOk());
      ASSERT_TRUE(clients.back()->sendRequest("GET", path, headers).isOk());
    }
  }
};

using LongPollTest = OverTransports<LongPollFixture>;
FORWARDING_OVER_TRANSPORTS(LongPollTest);

TEST_P(LongPollTest, AnOwnerKilledWhileALongPollWaitsTheNewOwnerAnswersWithinItsTimeout) {
  const std::string s = movingStream("poll-killed");
  const std::string tail = createAt(kOldOwner, s);
  CellClient poll;
  ASSERT_TRUE(connectTo(poll, cell_->ferry(kEntry)).isOk());
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      poll.sendRequest("GET", "/v1/stream/" + s + "?offset=" + tail + "&live=long-poll&timeout=20")
          .isOk());
  // The long-poll reached the owner's ferry (forwarded there), which passes it to its instance.
  ASSERT_GE(cell_->ferry(kOldOwner).waitForStat("ferry_requests_total", 1), 1);

  // The stream's state is where the fleet keeps it; its owner dies without a word.
  ASSERT_NO_FATAL_FAILURE(copyStream(s));
  cell_->emulator(kOldOwner).process().signal(SIGKILL);
  ASSERT_NO_FATAL_FAILURE(inst2Left());
  // Appended before or after the resent long-poll reaches the new owner: either way its answer.
  appendAt(kNewOwner, s, "after the move");

  auto r = poll.readResponse(Ms(20000));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, "after the move");
  EXPECT_EQ(r->headerOr("prisma-streams-origin"), "inst-3");
  EXPECT_LT(std::chrono::steady_clock::now() - sent, Ms(20000)) << "past the client's timeout";
  EXPECT_GE(resends(cell_->ferry(kEntry)), 1);
  EXPECT_EQ(cell_->ferry(kEntry).stat("ferry_live_feed_long_poll_resend_failures_total"), 0);
}

TEST_P(LongPollTest, ALongPollArrivingWhileItsShardMovesIsAnsweredByTheNewOwner) {
  const std::string s = movingStream("poll-moving");
  const std::string tail = createAt(kOldOwner, s);
  // The hand-over: the old owner answers 503 shard_moving with Retry-After for 3 s, then 409
  // naming inst-3; the stream's state moves; the others learn the new members.
  ASSERT_TRUE(
      cell_->emulator(kOldOwner).control(R"({"members":["inst-1","inst-3"],"handover_ms":3000})"));
  ASSERT_NO_FATAL_FAILURE(copyStream(s));
  CellClient poll;
  ASSERT_TRUE(connectTo(poll, cell_->ferry(kEntry)).isOk());
  ASSERT_TRUE(
      poll.sendRequest("GET", "/v1/stream/" + s + "?offset=" + tail + "&live=long-poll&timeout=20")
          .isOk());
  ASSERT_GE(cell_->ferry(kEntry).waitForStat(
                "ferry_live_feed_long_poll_resends_total{cause=\"retry_after\"}", 1),
            1);
  ASSERT_NO_FATAL_FAILURE(inst2Left());
  appendAt(kNewOwner, s, "moved");
  auto r = poll.readResponse(Ms(20000));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, "moved");
}

TEST_P(LongPollTest, PastItsTimeoutTheClientGetsWhatItWouldWithoutFerrysResend) {
  const std::string s = cell_->streamOwnedBy(kEntry, "poll-gone");
  const std::string tail = createAt(kEntry, s);
  cell_->emulator(kEntry).process().signal(SIGKILL);  // and nobody takes the stream over
  auto r = viaFerry(cell_->ferry(kEntry), "GET",
                    "/v1/stream/" + s + "?offset=" + tail + "&live=long-poll&timeout=1");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_NE(r->body.find("upstream_unavailable"), std::string::npos) << r->body;
  EXPECT_GE(cell_->ferry(kEntry).stat(
                "ferry_live_feed_long_poll_resends_total{cause=\"connect_failed\"}"),
            1);
  EXPECT_EQ(cell_->ferry(kEntry).stat("ferry_live_feed_long_poll_resend_failures_total"), 1);
}

class SharedLongPollFixture : public LongPollFixture {
 protected:
  std::string ferryExtraYaml() const override { return "live_feeds: {share: true}\n"; }
};
// The stream is the entry's own instance's (no forward): the owner protocol plays no part.
using SharedLongPollTest = OverTransports<SharedLongPollFixture>;
FORWARDING_OVER_HTTP1_OWNERS(SharedLongPollTest);

TEST_P(SharedLongPollTest, IdenticalLongPollsWaitingAtOnceAreOneUpstreamLongPoll) {
  constexpr size_t kClients = 6;
  const std::string s = cell_->streamOwnedBy(kEntry, "collapse");
  const std::string tail = createAt(kEntry, s);
  std::vector<std::unique_ptr<CellClient>> clients;
  ASSERT_NO_FATAL_FAILURE(sendLongPolls(
      clients, kClients, "/v1/stream/" + s + "?offset=" + tail + "&live=long-poll&timeout=20",
      {{"authorization", "Bearer same"}}));
  ASSERT_EQ(
      cell_->ferry(kEntry).waitForStat("ferry_live_feed_long_polls_collapsed_total", kClients - 1),
      static_cast<int64_t>(kClients - 1));
  const std::string next = appendAt(kEntry, s, "for everyone");
  for (size_t i = 0; i < kClients; ++i) {
    auto r = clients[i]->readResponse(Ms(10000));
    ASSERT_TRUE(r.isOk()) << i << ": " << r.status().message();
    EXPECT_EQ(r->status, 200) << i;
    EXPECT_EQ(r->body, "for everyone") << i;
    EXPECT_EQ(r->headerOr("stream-next-offset"), next) << i;
  }
  EXPECT_EQ(answered(cell_->emulator(kEntry), "raw_long_poll", "200"), 1u)
      << cell_->emulator(kEntry).requests();
}

TEST_P(SharedLongPollTest, ProductLongPollsAtOneCursorCollapseToo) {
  constexpr size_t kClients = 3;
  const std::string s = cell_->streamOwnedBy(kEntry, "product");
  auto create = httpRequest(cell_->emulator(kEntry).port(), "PUT", "/v1/streams/" + s, {});
  ASSERT_TRUE(create.isOk() && create->status == 201);
  std::vector<std::unique_ptr<CellClient>> clients;
  // No cursor: the start, which is the tail of the new stream.
  ASSERT_NO_FATAL_FAILURE(
      sendLongPolls(clients, kClients, "/v1/streams/" + s + "/records:long-poll?timeout=20"));
  ASSERT_EQ(
      cell_->ferry(kEntry).waitForStat("ferry_live_feed_long_polls_collapsed_total", kClients - 1),
      static_cast<int64_t>(kClients - 1));
  auto append = httpRequest(cell_->emulator(kEntry).port(), "POST", "/v1/streams/" + s + "/records",
                            {{"content-type", "application/json"}}, R"({"k":1})");
  ASSERT_TRUE(append.isOk() && append->status == 200);
  for (size_t i = 0; i < kClients; ++i) {
    auto r = clients[i]->readResponse(Ms(10000));
    ASSERT_TRUE(r.isOk()) << i << ": " << r.status().message();
    EXPECT_EQ(r->status, 200) << i;
    EXPECT_NE(r->body.find(R"({"k":1})"), std::string::npos) << r->body;
  }
  EXPECT_EQ(answered(cell_->emulator(kEntry), "product_long_poll", "200"), 1u)
      << cell_->emulator(kEntry).requests();
}

TEST_P(SharedLongPollTest, DifferentAuthorizationNeverShares) {
  const std::string s = cell_->streamOwnedBy(kEntry, "apart");
  const std::string tail = createAt(kEntry, s);
  const std::string path = "/v1/stream/" + s + "?offset=" + tail + "&live=long-poll&timeout=20";
  std::vector<std::unique_ptr<CellClient>> clients;
  ASSERT_NO_FATAL_FAILURE(sendLongPolls(clients, 2, path, {{"authorization", "Bearer alice"}}));
  ASSERT_NO_FATAL_FAILURE(sendLongPolls(clients, 2, path, {{"authorization", "Bearer bob"}}));
  ASSERT_EQ(cell_->ferry(kEntry).waitForStat("ferry_live_feed_long_polls_collapsed_total", 2), 2);
  appendAt(kEntry, s, "data");
  for (auto& client : clients) {
    auto r = client->readResponse(Ms(10000));
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "data");
  }
  EXPECT_EQ(answered(cell_->emulator(kEntry), "raw_long_poll", "200"), 2u)
      << "one upstream long-poll per Authorization: " << cell_->emulator(kEntry).requests();
  EXPECT_EQ(cell_->ferry(kEntry).stat("ferry_live_feed_long_polls_collapsed_total"), 2);
}

}  // namespace
}  // namespace ferry::fwdtest
