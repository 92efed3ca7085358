// Tests filters/live_feeds/long_poll_filter.cc, long_poll_read.cc, long_poll_hub.cc and
// long_poll_target.cc (docs/live-feeds.md, "Long-polls"): which requests the filter serves; a
// long-poll sent again when its upstream fails before its head or answers 503 with Retry-After,
// within the client's wait and asking only for what is left of it; past the wait the client's
// answer as without the filter; with `share`, identical long-polls at one read position on one
// worker collapsed onto one upstream long-poll whose answer every waiter gets, never across
// Authorization, offsets or offset=now, cancelled with its last waiter, and an answer over the
// limit read again by each. Each client stream is a fake StreamFilterCallbacks whose internal
// requests the test answers; the dispatcher is real (resend timers).

#include "filters/live_feeds/long_poll_filter.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "filters/live_feeds/long_poll_target.h"
#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/stats/stats.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::filters {
namespace {

using http::FilterStatus;
using Millis = std::chrono::milliseconds;
using Kind = upstream::UpstreamFailure::Kind;

// One internal request issued (by a stream, or by an issuer taken from it).
struct IssuedRequest {
  http::RequestHeaders head;
  http::InternalResponseCallbacks* callbacks = nullptr;
  bool cancelled = false;
  bool by_issuer = false;
};

class FakeInternalRequest : public http::InternalRequest {
 public:
  explicit FakeInternalRequest(std::shared_ptr<IssuedRequest> issued) : issued_(issued) {}
  ~FakeInternalRequest() override { issued_->cancelled = true; }
  void sendData(Buffer&, bool) override { ADD_FAILURE() << "a long-poll has no body"; }
  void pause(bool) override {}

 private:
  std::shared_ptr<IssuedRequest> issued_;
};

// Every internal request the test's streams issue, in order.
struct Upstream {
  std::vector<std::shared_ptr<IssuedRequest>> issued;
  event::Dispatcher* waiting_on = nullptr;  // runUntilNextRequest() waits

  http::InternalRequestPtr add(http::RequestHeadersPtr head,
                               http::InternalResponseCallbacks& callbacks, bool by_issuer) {
    auto r = std::make_shared<IssuedRequest>();
    r->head = *head;
    r->callbacks = &callbacks;
    r->by_issuer = by_issuer;
    issued.push_back(r);
    if (waiting_on != nullptr) waiting_on->exit();
    return std::make_unique<FakeInternalRequest>(r);
  }
  IssuedRequest& last() { return *issued.back(); }
};

class FakeIssuer : public http::InternalRequestIssuer {
 public:
  explicit FakeIssuer(Upstream& upstream) : upstream_(upstream) {}
  http::InternalRequestPtr start(http::RequestHeadersPtr head, bool end_stream,
                                 http::InternalResponseCallbacks& callbacks) override {
    EXPECT_TRUE(end_stream);
    return upstream_.add(std::move(head), callbacks, true);
  }

 private:
  Upstream& upstream_;
};

// One client stream.
class FakeClient : public http::StreamFilterCallbacks {
 public:
  FakeClient(event::Dispatcher& dispatcher, Upstream& upstream)
      : dispatcher_(dispatcher), upstream_(upstream) {}
  event::Dispatcher& dispatcher() override { return dispatcher_; }
  const http::RequestHeaders& requestHeaders() const override { return request; }
  void continueRequest() override {}
  void continueResponse() override {}
  void sendLocalReply(int status, std::string_view code, std::string_view,
                      const http::HeaderMap&) override {
    local_replies.push_back(status);
  }
  bool requestReplayable() const override { return true; }
  const upstream::UpstreamTarget& localTarget() const override { return local; }
  bool replay(const http::UpstreamRoute&) override { return false; }
  access_log::StreamInfo& streamInfo() override { return info; }
  http::InternalRequestPtr startInternalRequest(
      http::RequestHeadersPtr head, bool end_stream,
      http::InternalResponseCallbacks& callbacks) override {
    EXPECT_TRUE(end_stream);
    return upstream_.add(std::move(head), callbacks, false);
  }
  http::InternalRequestIssuerPtr newInternalRequestIssuer() override {
    return std::make_unique<FakeIssuer>(upstream_);
  }
  bool internalRequest() const override { return internal; }
  bool sendResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) override {
    EXPECT_EQ(heads, 0) << "a second response head";
    ++heads;
    head_status = headers->status;
    head_has_request_id = headers->headers.has("x-request-id");
    ended = end_stream;
    return true;
  }
  bool sendResponseData(Buffer& data, bool end_stream) override {
    EXPECT_FALSE(ended) << "data after the end";
    body += data.toString();
    data.drain(data.length());
    ended = end_stream;
    return true;
  }
  void sendUpstreamFailureReply(const upstream::UpstreamFailure& failure) override {
    failure_replies.push_back(failure.kind);
  }

  http::RequestHeaders request;
  bool internal = false;
  std::vector<int> local_replies;
  std::vector<Kind> failure_replies;
  int heads = 0;
  int head_status = 0;
  bool head_has_request_id = false;
  std::string body;
  bool ended = false;
  access_log::StreamInfo info;
  upstream::UpstreamTarget local{"local", "http", "127.0.0.1", 8080, ""};

 private:
  event::Dispatcher& dispatcher_;
  Upstream& upstream_;
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

  // A client's long-poll reaching a new filter; its status.
  FilterStatus start(const std::string& path = kPoll, const std::string& auth = "Bearer t",
                     const std::string& method = "GET", bool end_stream = true) {
    clients_.push_back(std::make_unique<FakeClient>(dispatcher_, upstream_));
    FakeClient& c = *clients_.back();
    filters_.push_back(std::make_unique<LongPollFilter>(config_, *worker_));
    filters_.back()->setCallbacks(c);
    c.request.method = method;
    c.request.path = path;
    c.request.headers.add("x-request-id", "client-" + std::to_string(clients_.size()));
    c.request.headers.add("authorization", auth);
    return filters_.back()->onRequestHeaders(c.request, end_stream);
  }
  FakeClient& client(size_t i) { return *clients_[i]; }
  // The client's stream ends (its client left): the filter hears onDestroy().
  void leave(size_t i) { filters_[i]->onDestroy(); }

  static http::ResponseHeadersPtr head(int status, const std::string& retry_after = "") {
    auto h = std::make_unique<http::ResponseHeaders>();
    h->status = status;
    h->headers.add("stream-next-offset", "9");
    if (!retry_after.empty()) h->headers.add("retry-after", retry_after);
    h->headers.add("x-request-id", "client-1-r1");
    return h;
  }
  void answer(int status, const std::string& body_bytes) {
    auto* cb = upstream_.last().callbacks;
    cb->onInternalResponseHeaders(head(status), body_bytes.empty());
    if (body_bytes.empty()) return;
    Buffer b;
    b.add(body_bytes);
    cb->onInternalResponseData(b, true);
  }
  static upstream::UpstreamFailure failure(Kind kind) {
    upstream::UpstreamFailure f;
    f.kind = kind;
    f.request_bytes_sent = true;
    return f;
  }
  // Runs the dispatcher until the next internal request is issued; false if none within `limit`.
  bool runUntilNextRequest(Millis limit = Millis(5000)) {
    const size_t before = upstream_.issued.size();
    auto give_up = dispatcher_.createTimer([this] { dispatcher_.exit(); });
    give_up->enable(limit);
    upstream_.waiting_on = &dispatcher_;
    dispatcher_.run();
    upstream_.waiting_on = nullptr;
    return upstream_.issued.size() > before;
  }
  int64_t stat(const std::string& series) {
    return testing::expectSeries(store_.renderPrometheus(), series);
  }

  stats::Store store_;
  event::Dispatcher dispatcher_;
  event::WorkerSlots slots_;
  std::unique_ptr<event::WorkerContext> worker_;
  LongPollConfig config_;
  Upstream upstream_;
  std::vector<std::unique_ptr<FakeClient>> clients_;
  std::vector<std::unique_ptr<LongPollFilter>> filters_;
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

// ---- Which requests
// ------------------------------------------------------------------------------

TEST_F(LongPollFilterTest, OnlyBodilessGetsOfLongPollsOutsideInternalRequestsAreServed) {
  EXPECT_EQ(start(kPoll, "a", "POST"), FilterStatus::Continue);
  EXPECT_EQ(start(kPoll, "a", "GET", false), FilterStatus::Continue);
  EXPECT_EQ(start("/v1/stream/s?offset=5"), FilterStatus::Continue);
  clients_.push_back(std::make_unique<FakeClient>(dispatcher_, upstream_));
  clients_.back()->internal = true;  // the filter's own request, running the chain again
  LongPollFilter own(config_, *worker_);
  own.setCallbacks(*clients_.back());
  clients_.back()->request.method = "GET";
  clients_.back()->request.path = kPoll;
  EXPECT_EQ(own.onRequestHeaders(clients_.back()->request, true), FilterStatus::Continue);
  EXPECT_TRUE(upstream_.issued.empty());
  EXPECT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(upstream_.issued.size(), 1u);
  EXPECT_EQ(upstream_.last().head.path, kPoll) << "the first attempt is the client's request";
  EXPECT_FALSE(upstream_.last().head.headers.has("x-request-id"));
  own.onDestroy();
}

// ---- Sent again before the head
// ------------------------------------------------------------------

TEST_F(LongPollFilterTest, AnUpstreamThatFailsBeforeItsHeadIsSentAgainForTheWaitLeft) {
  ASSERT_EQ(start("/v1/stream/s?offset=5&live=long-poll&timeout=3"), FilterStatus::StopAndWait);
  upstream_.last().callbacks->onInternalRequestFailed(failure(Kind::Reset));
  ASSERT_TRUE(runUntilNextRequest());
  EXPECT_EQ(upstream_.issued.size(), 2u);
  // 3 s less the backoff, in whole seconds.
  EXPECT_EQ(upstream_.last().head.path, "/v1/stream/s?offset=5&live=long-poll&timeout=2");
  EXPECT_EQ(client(0).heads, 0) << "the failure never reached the client";
  answer(200, "data");
  EXPECT_EQ(client(0).head_status, 200);
  EXPECT_FALSE(client(0).head_has_request_id);
  EXPECT_EQ(client(0).body, "data");
  EXPECT_TRUE(client(0).ended);
  EXPECT_EQ(stat("ferry_live_feed_long_poll_resends_total{cause=\"reset\"}"), 1);
}

TEST_F(LongPollFilterTest, A503WithRetryAfterIsWaitedForThenSentAgain) {
  ASSERT_EQ(start("/v1/stream/s?offset=5&live=long-poll&timeout=5"), FilterStatus::StopAndWait);
  upstream_.last().callbacks->onInternalResponseHeaders(head(503, "1"), false);
  EXPECT_TRUE(upstream_.last().cancelled);
  const auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(runUntilNextRequest());
  EXPECT_GE(std::chrono::steady_clock::now() - asked, Millis(950));
  EXPECT_EQ(upstream_.last().head.path, "/v1/stream/s?offset=5&live=long-poll&timeout=3");
  answer(204, "");
  EXPECT_EQ(client(0).head_status, 204);
  EXPECT_TRUE(client(0).ended);
  EXPECT_EQ(stat("ferry_live_feed_long_poll_resends_total{cause=\"retry_after\"}"), 1);
}

TEST_F(LongPollFilterTest, AProxys502IsSentAgainButAnInstances502IsTheAnswer) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  // The owner's ferry lost its instance after sending it the request: 502, no instance origin.
  upstream_.last().callbacks->onInternalResponseHeaders(head(502), false);
  EXPECT_TRUE(upstream_.last().cancelled);
  ASSERT_TRUE(runUntilNextRequest());
  EXPECT_EQ(stat("ferry_live_feed_long_poll_resends_total{cause=\"bad_gateway\"}"), 1);
  auto from_instance = head(502);
  from_instance->headers.add("prisma-streams-origin", "inst-2");
  upstream_.last().callbacks->onInternalResponseHeaders(std::move(from_instance), true);
  EXPECT_EQ(client(0).head_status, 502);
  EXPECT_EQ(upstream_.issued.size(), 2u);
}

TEST_F(LongPollFilterTest, PastTheWaitTheClientGetsTheFailuresAnswer) {
  ASSERT_EQ(start("/v1/stream/s?offset=5&live=long-poll&timeout=0"), FilterStatus::StopAndWait);
  upstream_.last().callbacks->onInternalRequestFailed(failure(Kind::ConnectFailed));
  EXPECT_EQ(client(0).failure_replies, std::vector<Kind>{Kind::ConnectFailed});
  EXPECT_FALSE(runUntilNextRequest(Millis(300)));
  EXPECT_EQ(stat("ferry_live_feed_long_poll_resend_failures_total"), 1);
}

TEST_F(LongPollFilterTest, PastTheWaitA503GoesToTheClientAsItIs) {
  ASSERT_EQ(start("/v1/stream/s?offset=5&live=long-poll&timeout=0.5"), FilterStatus::StopAndWait);
  upstream_.last().callbacks->onInternalResponseHeaders(head(503, "1"), false);
  EXPECT_EQ(client(0).head_status, 503);
  EXPECT_FALSE(upstream_.last().cancelled);
}

TEST_F(LongPollFilterTest, OtherAnswersAreTheClientsAnswer) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  upstream_.last().callbacks->onInternalResponseHeaders(head(500), true);
  EXPECT_EQ(client(0).head_status, 500);
  EXPECT_EQ(upstream_.issued.size(), 1u);
}

TEST_F(LongPollFilterTest, TheClientLeavingCancelsItsReadAndAnyResend) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  upstream_.last().callbacks->onInternalRequestFailed(failure(Kind::Reset));
  leave(0);
  EXPECT_FALSE(runUntilNextRequest(Millis(400)));
}

// ---- Collapsed (live_feeds.share)
// ------------------------------------------------------------------

TEST_F(LongPollFilterTest, IdenticalWaitingLongPollsShareOneUpstreamLongPollAndEachGetsTheAnswer) {
  config_.share = true;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(upstream_.issued.size(), 1u);
  EXPECT_TRUE(upstream_.last().by_issuer) << "it must not end with the first client's stream";
  EXPECT_EQ(stat("ferry_live_feed_long_polls_collapsed_total"), 2);
  answer(200, "records");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(client(i).head_status, 200) << i;
    EXPECT_FALSE(client(i).head_has_request_id) << "each client's id comes from its stream";
    EXPECT_EQ(client(i).body, "records") << i;
    EXPECT_TRUE(client(i).ended) << i;
  }
  // Answered: the next one reads anew.
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  EXPECT_EQ(upstream_.issued.size(), 2u);
}

TEST_F(LongPollFilterTest, ACollapsed204GoesToEveryWaiter) {
  config_.share = true;
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  answer(204, "");
  EXPECT_EQ(client(0).head_status, 204);
  EXPECT_EQ(client(1).head_status, 204);
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
  EXPECT_EQ(upstream_.issued.size(), 6u);
  EXPECT_EQ(stat("ferry_live_feed_long_polls_collapsed_total"), 0);
}

TEST_F(LongPollFilterTest, TheUpstreamLongPollEndsWithItsLastWaiterNotItsFirst) {
  config_.share = true;
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  leave(0);
  EXPECT_FALSE(upstream_.last().cancelled) << "the second client still waits";
  answer(200, "x");
  EXPECT_EQ(client(1).body, "x");
  EXPECT_EQ(client(0).heads, 0);

  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  leave(2);
  leave(3);
  EXPECT_TRUE(upstream_.last().cancelled);
}

TEST_F(LongPollFilterTest, ASharedUpstreamFailingBeforeItsHeadIsSentAgainForAll) {
  config_.share = true;
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  upstream_.last().callbacks->onInternalRequestFailed(failure(Kind::Reset));
  ASSERT_TRUE(runUntilNextRequest());
  EXPECT_TRUE(upstream_.last().by_issuer);
  answer(200, "y");
  EXPECT_EQ(client(0).body, "y");
  EXPECT_EQ(client(1).body, "y");
}

TEST_F(LongPollFilterTest, AnAnswerOverTheLimitIsReadAgainByEachWaiterAlone) {
  config_.share = true;
  config_.answer_limit = 4;
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  IssuedRequest& shared = upstream_.last();
  answer(200, "too long");
  EXPECT_TRUE(shared.cancelled);
  ASSERT_EQ(upstream_.issued.size(), 3u) << "each waiter reads on its own";
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_FALSE(upstream_.issued[i]->by_issuer);
    EXPECT_EQ(upstream_.issued[i]->head.path, kPoll);
  }
  EXPECT_EQ(client(0).heads, 0);
  EXPECT_EQ(stat("ferry_live_feed_long_poll_waiters_detached_total"), 2);
  upstream_.issued[1]->callbacks->onInternalResponseHeaders(head(200), true);
  EXPECT_EQ(client(0).head_status, 200);
}

}  // namespace
}  // namespace ferry::filters
