// Tests filters/live_feeds/long_poll_filter.cc, long_poll_read.cc, long_poll_hub.cc and
// long_poll_target.cc (docs/live-feeds.md, "Long-polls"): which requests the filter serves; a
// long-poll sent again when its upstream fails before its head or answers 503 with Retry-After,
// within the client's wait and asking only for what is left of it; past the wait the client's
// answer as without the filter; with `share`, identical long-polls at one read position on one
// worker collapsed onto one upstream long-poll whose answer every waiter gets, never across
// Authorization, offsets or offset=now, cancelled with its last waiter, and an answer over the
// limit read again by each. Each client is a long-poll filter on its own recording fake stream
// (tests/support/http/fake_filter_callbacks.h), all on one real dispatcher (resend timers) and
// one worker context (one LongPollHub); the test answers the internal requests each stream
// records.

#include "filters/live_feeds/long_poll_filter.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "filters/live_feeds/long_poll_target.h"
#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/stats/stats.h"
#include "tests/support/http/fake_filter_callbacks.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::filters {
namespace {

using http::FilterStatus;
using Millis = std::chrono::milliseconds;
using Kind = upstream::UpstreamFailure::Kind;

// One client: its stream (the fake) and its long-poll filter.
struct Client {
  explicit Client(event::Dispatcher& dispatcher) : stream(dispatcher) {
    stream.forbid(testing::FakeFilterCallbacks::Call::InternalRequestBody,
                  "a long-poll has no body");
  }
  testing::FakeFilterCallbacks stream;
  std::unique_ptr<LongPollFilter> filter;
};

constexpr char kPoll[] = "/v1/stream/s?offset=5&live=long-poll";

class LongPollFilterTest : public ::testing::Test {
 protected:
  LongPollFilterTest() {
    config_.stats = std::make_shared<LongPollStats>(store_);
    config_.is_long_poll = [](const http::RequestHeaders& r) {
      return r.path.find("live=long-poll") != std::string::npos;
    };
    config_.hub = slots_.allocate<LongPollHub>([](event::WorkerContext& worker) {
      return std::make_unique<LongPollHub>(worker.dispatcher());
    });
    worker_ = std::make_unique<event::WorkerContext>(dispatcher_, slots_);
  }

  // A client's long-poll reaching a new filter on a stream of its own; its status.
  FilterStatus start(const std::string& path = kPoll, const std::string& auth = "Bearer t",
                     const std::string& method = "GET", bool end_stream = true,
                     bool internal = false) {
    clients_.push_back(std::make_unique<Client>(dispatcher_));
    Client& c = *clients_.back();
    c.stream.internal = internal;
    c.stream.request.method = method;
    c.stream.request.path = path;
    c.stream.request.headers.add("x-request-id", "client-" + std::to_string(clients_.size()));
    c.stream.request.headers.add("authorization", auth);
    c.filter = std::make_unique<LongPollFilter>(config_, *worker_);
    c.filter->setCallbacks(c.stream);
    return c.filter->onRequestHeaders(c.stream.request, end_stream);
  }
  // Client i's stream: what it was sent, and the internal requests started on it (its own
  // reads, and a collapsed long-poll's, whose issuer came from the stream that opened it).
  testing::FakeFilterCallbacks& client(size_t i) { return clients_.at(i)->stream; }
  // The internal requests every client's stream started.
  size_t issuedByAll() const {
    size_t n = 0;
    for (const auto& c : clients_) n += c->stream.issued();
    return n;
  }
  // The client's stream ends (its client left): the filter hears onDestroy().
  void leave(size_t i) { clients_.at(i)->filter->onDestroy(); }

  static http::ResponseHeadersPtr head(int status, const std::string& retry_after = "") {
    auto h = std::make_unique<http::ResponseHeaders>();
    h->status = status;
    h->headers.add("stream-next-offset", "9");
    if (!retry_after.empty()) h->headers.add("retry-after", retry_after);
    h->headers.add("x-request-id", "client-1-r1");
    return h;
  }
  static void answer(testing::IssuedRequest& request, int status, const std::string& body_bytes) {
    request.callbacks->onInternalResponseHeaders(head(status), body_bytes.empty());
    if (body_bytes.empty()) return;
    Buffer b;
    b.add(body_bytes);
    request.callbacks->onInternalResponseData(b, true);
  }
  static upstream::UpstreamFailure failure(Kind kind) {
    upstream::UpstreamFailure f;
    f.kind = kind;
    f.request_bytes_sent = true;
    return f;
  }
  static std::vector<Kind> kinds(const std::vector<upstream::UpstreamFailure>& failures) {
    std::vector<Kind> out;
    for (const auto& f : failures) out.push_back(f.kind);
    return out;
  }
  int64_t stat(const std::string& series) {
    return testing::expectSeries(store_.renderPrometheus(), series);
  }

  stats::Store store_;
  event::Dispatcher dispatcher_;
  event::WorkerSlots slots_;
  LongPollConfig config_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::unique_ptr<event::WorkerContext> worker_;  // after the clients: the hub goes first
};

// ---- The client's wait and the resent target ---------------------------------------------------

TEST(LongPollTargetTest, TheWaitIsTheTimeoutParameterInSecondsDefaultThreeAtMostTwentyFive) {
  EXPECT_EQ(longPollWait("/v1/stream/s?live=long-poll"), Millis(3000));
  EXPECT_EQ(longPollWait("/v1/stream/s"), Millis(3000));
  EXPECT_EQ(longPollWait("/v1/stream/s?timeout=10&live=long-poll"), Millis(10000));
  EXPECT_EQ(longPollWait("/v1/stream/s?timeout=1.5"), Millis(1500));
  EXPECT_EQ(longPollWait("/v1/stream/s?timeout=0"), Millis(0));
  EXPECT_EQ(longPollWait("/v1/stream/s?timeout=600"), Millis(25000));
  EXPECT_EQ(longPollWait("/v1/stream/s?timeout=5s"), Millis(3000));  // as the instance reads it
  EXPECT_EQ(longPollWait("/v1/stream/s?time%6Fut=2&timeout=7"), Millis(2000));  // the first
}

TEST(LongPollTargetTest, AResendAsksForTheSecondsLeftKeepingEveryOtherParameter) {
  EXPECT_EQ(withLongPollTimeout("/v1/stream/s?offset=5&timeout=10&live=long-poll", 4),
            "/v1/stream/s?offset=5&timeout=4&live=long-poll");
  EXPECT_EQ(withLongPollTimeout("/v1/stream/s?offset=5&live=long-poll", 2),
            "/v1/stream/s?offset=5&live=long-poll&timeout=2");
  EXPECT_EQ(withLongPollTimeout("/v1/streams/s/records:long-poll", 0),
            "/v1/streams/s/records:long-poll?timeout=0");
  EXPECT_EQ(withLongPollTimeout("/p?timeout=1&a=b&timeout=9", 3), "/p?timeout=3&a=b");
}

// ---- Which requests ------------------------------------------------------------------------

TEST_F(LongPollFilterTest, OnlyBodilessGetsOfLongPollsOutsideInternalRequestsAreServed) {
  EXPECT_EQ(start(kPoll, "a", "POST"), FilterStatus::Continue);
  EXPECT_EQ(start(kPoll, "a", "GET", false), FilterStatus::Continue);
  EXPECT_EQ(start("/v1/stream/s?offset=5"), FilterStatus::Continue);
  // The filter's own request, running the chain again.
  EXPECT_EQ(start(kPoll, "a", "GET", true, true), FilterStatus::Continue);
  EXPECT_EQ(issuedByAll(), 0u);
  EXPECT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(issuedByAll(), 1u);
  EXPECT_EQ(client(4).last().head.path, kPoll) << "the first attempt is the client's request";
  EXPECT_FALSE(client(4).last().head.headers.has("x-request-id"));
}

// ---- Sent again before the head --------------------------------------------------------------

TEST_F(LongPollFilterTest, AnUpstreamThatFailsBeforeItsHeadIsSentAgainForTheWaitLeft) {
  ASSERT_EQ(start("/v1/stream/s?offset=5&live=long-poll&timeout=3"), FilterStatus::StopAndWait);
  client(0).last().callbacks->onInternalRequestFailed(failure(Kind::Reset));
  ASSERT_TRUE(client(0).runUntilNextRequest());
  EXPECT_EQ(client(0).issued(), 2u);
  // 3 s less the backoff, in whole seconds.
  EXPECT_EQ(client(0).last().head.path, "/v1/stream/s?offset=5&live=long-poll&timeout=2");
  EXPECT_EQ(client(0).heads, 0) << "the failure never reached the client";
  answer(client(0).last(), 200, "data");
  EXPECT_EQ(client(0).responseHead().status, 200);
  EXPECT_FALSE(client(0).responseHead().headers.has("x-request-id"));
  EXPECT_EQ(client(0).body, "data");
  EXPECT_TRUE(client(0).ended);
  EXPECT_EQ(stat("ferry_live_feed_long_poll_resends_total{cause=\"reset\"}"), 1);
}

TEST_F(LongPollFilterTest, A503WithRetryAfterIsWaitedForThenSentAgain) {
  ASSERT_EQ(start("/v1/stream/s?offset=5&live=long-poll&timeout=5"), FilterStatus::StopAndWait);
  client(0).last().callbacks->onInternalResponseHeaders(head(503, "1"), false);
  EXPECT_TRUE(client(0).last().cancelled);
  const auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(client(0).runUntilNextRequest());
  EXPECT_GE(std::chrono::steady_clock::now() - asked, Millis(950));
  EXPECT_EQ(client(0).last().head.path, "/v1/stream/s?offset=5&live=long-poll&timeout=3");
  answer(client(0).last(), 204, "");
  EXPECT_EQ(client(0).responseHead().status, 204);
  EXPECT_TRUE(client(0).ended);
  EXPECT_EQ(stat("ferry_live_feed_long_poll_resends_total{cause=\"retry_after\"}"), 1);
}

TEST_F(LongPollFilterTest, AProxys502IsSentAgainButAnInstances502IsTheAnswer) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  // The owner's ferry lost its instance after sending it the request: 502, no instance origin.
  client(0).last().callbacks->onInternalResponseHeaders(head(502), false);
  EXPECT_TRUE(client(0).last().cancelled);
  ASSERT_TRUE(client(0).runUntilNextRequest());
  EXPECT_EQ(stat("ferry_live_feed_long_poll_resends_total{cause=\"bad_gateway\"}"), 1);
  auto from_instance = head(502);
  from_instance->headers.add("prisma-streams-origin", "inst-2");
  client(0).last().callbacks->onInternalResponseHeaders(std::move(from_instance), true);
  EXPECT_EQ(client(0).responseHead().status, 502);
  EXPECT_EQ(client(0).issued(), 2u);
}

TEST_F(LongPollFilterTest, PastTheWaitTheClientGetsTheFailuresAnswer) {
  ASSERT_EQ(start("/v1/stream/s?offset=5&live=long-poll&timeout=0"), FilterStatus::StopAndWait);
  client(0).last().callbacks->onInternalRequestFailed(failure(Kind::ConnectFailed));
  EXPECT_EQ(kinds(client(0).failure_replies), std::vector<Kind>{Kind::ConnectFailed});
  EXPECT_FALSE(client(0).runUntilNextRequest(Millis(300)));
  EXPECT_EQ(stat("ferry_live_feed_long_poll_resend_failures_total"), 1);
}

TEST_F(LongPollFilterTest, PastTheWaitA503GoesToTheClientAsItIs) {
  ASSERT_EQ(start("/v1/stream/s?offset=5&live=long-poll&timeout=0.5"), FilterStatus::StopAndWait);
  client(0).last().callbacks->onInternalResponseHeaders(head(503, "1"), false);
  EXPECT_EQ(client(0).responseHead().status, 503);
  EXPECT_FALSE(client(0).last().cancelled);
}

TEST_F(LongPollFilterTest, OtherAnswersAreTheClientsAnswer) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  client(0).last().callbacks->onInternalResponseHeaders(head(500), true);
  EXPECT_EQ(client(0).responseHead().status, 500);
  EXPECT_EQ(client(0).issued(), 1u);
}

TEST_F(LongPollFilterTest, TheClientLeavingCancelsItsReadAndAnyResend) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  client(0).last().callbacks->onInternalRequestFailed(failure(Kind::Reset));
  leave(0);
  EXPECT_FALSE(client(0).runUntilNextRequest(Millis(400)));
}

// ---- Collapsed (live_feeds.share) ------------------------------------------------------------

TEST_F(LongPollFilterTest, IdenticalWaitingLongPollsShareOneUpstreamLongPollAndEachGetsTheAnswer) {
  config_.share = true;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(issuedByAll(), 1u);
  ASSERT_EQ(client(0).issued(), 1u);
  EXPECT_TRUE(client(0).last().through_issuer) << "it must not end with the first client's stream";
  EXPECT_EQ(stat("ferry_live_feed_long_polls_collapsed_total"), 2);
  answer(client(0).last(), 200, "records");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(client(i).responseHead().status, 200) << i;
    EXPECT_FALSE(client(i).responseHead().headers.has("x-request-id"))
        << "each client's id comes from its stream";
    EXPECT_EQ(client(i).body, "records") << i;
    EXPECT_TRUE(client(i).ended) << i;
  }
  // Answered: the next one reads anew.
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  EXPECT_EQ(issuedByAll(), 2u);
  EXPECT_EQ(client(3).issued(), 1u);
}

TEST_F(LongPollFilterTest, ACollapsed204GoesToEveryWaiter) {
  config_.share = true;
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  answer(client(0).last(), 204, "");
  EXPECT_EQ(client(0).responseHead().status, 204);
  EXPECT_EQ(client(1).responseHead().status, 204);
  EXPECT_TRUE(client(1).ended);
}

TEST_F(LongPollFilterTest, DifferentAuthorizationPositionsOrOffsetNowNeverCollapse) {
  config_.share = true;
  ASSERT_EQ(start(kPoll, "Bearer a"), FilterStatus::StopAndWait);
  ASSERT_EQ(start(kPoll, "Bearer b"), FilterStatus::StopAndWait);
  ASSERT_EQ(start("/v1/stream/s?offset=6&live=long-poll", "Bearer a"), FilterStatus::StopAndWait);
  ASSERT_EQ(start("/v1/stream/s?offset=5&live=long-poll&cursor=c", "Bearer a"),
            FilterStatus::StopAndWait);
  ASSERT_EQ(start("/v1/stream/s?offset=now&live=long-poll"), FilterStatus::StopAndWait);
  ASSERT_EQ(start("/v1/stream/s?offset=now&live=long-poll"), FilterStatus::StopAndWait);
  EXPECT_EQ(issuedByAll(), 6u);
  EXPECT_EQ(stat("ferry_live_feed_long_polls_collapsed_total"), 0);
}

TEST_F(LongPollFilterTest, TheUpstreamLongPollEndsWithItsLastWaiterNotItsFirst) {
  config_.share = true;
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  leave(0);
  EXPECT_FALSE(client(0).last().cancelled) << "the second client still waits";
  answer(client(0).last(), 200, "x");
  EXPECT_EQ(client(1).body, "x");
  EXPECT_EQ(client(0).heads, 0);

  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(client(2).issued(), 1u);
  leave(2);
  leave(3);
  EXPECT_TRUE(client(2).last().cancelled);
}

TEST_F(LongPollFilterTest, ASharedUpstreamFailingBeforeItsHeadIsSentAgainForAll) {
  config_.share = true;
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  client(0).last().callbacks->onInternalRequestFailed(failure(Kind::Reset));
  ASSERT_TRUE(client(0).runUntilNextRequest());
  EXPECT_TRUE(client(0).last().through_issuer);
  EXPECT_EQ(issuedByAll(), 2u);
  answer(client(0).last(), 200, "y");
  EXPECT_EQ(client(0).body, "y");
  EXPECT_EQ(client(1).body, "y");
}

TEST_F(LongPollFilterTest, AnAnswerOverTheLimitIsReadAgainByEachWaiterAlone) {
  config_.share = true;
  config_.answer_limit = 4;
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  testing::IssuedRequest& shared = client(0).last();
  answer(shared, 200, "too long");
  EXPECT_TRUE(shared.cancelled);
  ASSERT_EQ(issuedByAll(), 3u) << "each waiter reads on its own";
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_FALSE(client(i).last().through_issuer) << i;
    EXPECT_EQ(client(i).last().head.path, kPoll) << i;
  }
  EXPECT_EQ(client(0).heads, 0);
  EXPECT_EQ(stat("ferry_live_feed_long_poll_waiters_detached_total"), 2);
  client(0).last().callbacks->onInternalResponseHeaders(head(200), true);
  EXPECT_EQ(client(0).responseHead().status, 200);
}

}  // namespace
}  // namespace ferry::filters
