// Tests filters/live_feeds/live_feeds_filter.cc (docs/live-feeds.md, "Resume"): which requests
// it serves, the client's one response made of whole events from one or more internal requests,
// the resume after an upstream that ended or broke (offset and cursor of the last delivered
// frame, Retry-After, the deadline), the stream's own end, watermarks and a drain. The stream is
// the recording fake (tests/support/http/fake_filter_callbacks.h) whose internal requests the
// test answers; the dispatcher is real (the filter's resume timer), run until the filter issues
// its next request.

#include "filters/live_feeds/live_feeds_filter.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/stats/stats.h"
#include "tests/support/http/fake_filter_callbacks.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::filters {
namespace {

using http::FilterStatus;
using Millis = std::chrono::milliseconds;

// The stream: the recording fake, whose internal requests the test answers. The filter never
// replays, and a feed read has no body.
class FakeCallbacks : public testing::FakeFilterCallbacks {
 public:
  FakeCallbacks() {
    forbid(Call::Replay, "the live-feeds filter never replays");
    forbid(Call::InternalRequestBody, "a feed read has no body");
  }
};

constexpr char kFeed[] = "/v1/stream/s?offset=-1&live=sse";

std::string dataEvent(const std::string& records) {
  return "event: data\ndata:[" + records + "]\n\n";
}
std::string control(const std::string& offset, bool closed = false) {
  return "event: control\ndata:{\"streamNextOffset\":\"" + offset + "\",\"streamCursor\":\"c" +
         offset + "\"" + (closed ? ",\"streamClosed\":true" : "") + "}\n\n";
}

class LiveFeedsFilterTest : public ::testing::Test {
 protected:
  LiveFeedsFilterTest() : stats_(store_) {
    config_.reader.resume_deadline = Millis(30'000);
    config_.reader.stats = &stats_;
    config_.is_sse_feed = [](const http::RequestHeaders& r) {
      return r.path.find("live=sse") != std::string::npos;
    };
  }

  FilterStatus start(const std::string& method = "GET", const std::string& path = kFeed,
                     bool end_stream = true) {
    filter_ = std::make_unique<LiveFeedsFilter>(config_, worker_);
    filter_->setCallbacks(cb_);
    cb_.request.method = method;
    cb_.request.path = path;
    cb_.request.headers.add("x-request-id", "client-id");
    cb_.request.headers.add("authorization", "Bearer t");
    return filter_->onRequestHeaders(cb_.request, end_stream);
  }

  static http::ResponseHeadersPtr head(int status, const std::string& type,
                                       const std::string& retry_after = "") {
    auto h = std::make_unique<http::ResponseHeaders>();
    h->status = status;
    if (!type.empty()) h->headers.add("content-type", type);
    if (!retry_after.empty()) h->headers.add("retry-after", retry_after);
    h->headers.add("x-request-id", "client-id-r1");
    return h;
  }
  void answerFeed() {
    cb_.last().callbacks->onInternalResponseHeaders(head(200, "text/event-stream"), false);
  }
  void body(const std::string& bytes, bool end = false) {
    Buffer b;
    b.add(bytes);
    cb_.last().callbacks->onInternalResponseData(b, end);
  }
  int64_t stat(const std::string& series) {
    return testing::expectSeries(store_.renderPrometheus(), series);
  }

  stats::Store store_;
  LiveFeedsStats stats_;
  LiveFeedsConfig config_;
  FakeCallbacks cb_;
  event::WorkerSlots slots_;  // none allocated: sharing is off here (feed_sharing_test.cc)
  event::WorkerContext worker_{cb_.dispatcher(), slots_};
  std::unique_ptr<LiveFeedsFilter> filter_;
};

TEST_F(LiveFeedsFilterTest, OnlyBodilessGetsOfFeedsOutsideInternalRequestsAreServed) {
  EXPECT_EQ(start("POST"), FilterStatus::Continue);  // an append is never taken over
  EXPECT_EQ(start("GET", kFeed, false), FilterStatus::Continue);
  EXPECT_EQ(start("GET", "/v1/stream/s?offset=-1"), FilterStatus::Continue);
  cb_.internal = true;  // the filter's own request, running the chain again
  EXPECT_EQ(start(), FilterStatus::Continue);
  EXPECT_EQ(cb_.issued(), 0u);
  cb_.internal = false;
  EXPECT_EQ(start(), FilterStatus::StopAndWait);
  EXPECT_EQ(cb_.issued(), 1u);
}

TEST_F(LiveFeedsFilterTest, TheFirstAnswersHeadGoesOutAndEventsOnlyWhole) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  EXPECT_EQ(cb_.last().head.path, kFeed);
  EXPECT_EQ(cb_.last().head.headers.get("authorization"), "Bearer t");
  EXPECT_FALSE(
      cb_.last().head.headers.has("x-request-id"));  // the internal request derives its own
  answerFeed();
  EXPECT_EQ(cb_.responseHead().status, 200);
  EXPECT_FALSE(
      cb_.responseHead().headers.has("x-request-id"));  // the client gets its own request's id
  body(dataEvent("1"));
  body(control("5").substr(0, 20));
  EXPECT_EQ(cb_.body, "");  // the data event waits for the frame that gives its end offset
  body(control("5").substr(20));
  EXPECT_EQ(cb_.body, dataEvent("1") + control("5"));
  EXPECT_FALSE(cb_.ended);
}

TEST_F(LiveFeedsFilterTest, AnEndedUpstreamIsReadAgainFromTheLastDeliveredFrame) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  answerFeed();
  body(dataEvent("1") + control("5") + dataEvent("2"));  // the second event has no frame yet
  body("", true);  // the upstream ends without the stream's end (a hand-over)
  EXPECT_TRUE(cb_.last().cancelled);
  ASSERT_TRUE(cb_.runUntilNextRequest());
  EXPECT_EQ(cb_.issued(), 2u);
  EXPECT_EQ(cb_.last().head.path, "/v1/stream/s?offset=5&live=sse&cursor=c5");
  answerFeed();  // the resumed read's head is not the client's
  body(dataEvent("2") + control("7"));
  EXPECT_EQ(cb_.heads, 1);
  EXPECT_EQ(cb_.body, dataEvent("1") + control("5") + dataEvent("2") + control("7"));
  EXPECT_FALSE(cb_.ended);
  EXPECT_EQ(stat("ferry_live_feed_resumes_total{cause=\"ended\"}"), 1);
  EXPECT_EQ(cb_.info.get("feed_resumes"), "1");
  const int64_t delivered = (dataEvent("1") + control("5") + dataEvent("2") + control("7")).size();
  EXPECT_EQ(stat("ferry_live_feed_delivered_bytes_total"), delivered);
  EXPECT_EQ(stat("ferry_live_feed_received_bytes_total"), delivered + dataEvent("2").size());
}

TEST_F(LiveFeedsFilterTest, ABrokenUpstreamIsResumedWithItsCause) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  answerFeed();
  body(dataEvent("1") + control("5"));
  upstream::UpstreamFailure reset;
  reset.kind = upstream::UpstreamFailure::Kind::Reset;
  cb_.last().callbacks->onInternalResponseReset(&reset);
  ASSERT_TRUE(cb_.runUntilNextRequest());
  EXPECT_EQ(cb_.last().head.path, "/v1/stream/s?offset=5&live=sse&cursor=c5");
  EXPECT_EQ(stat("ferry_live_feed_resumes_total{cause=\"reset\"}"), 1);
}

TEST_F(LiveFeedsFilterTest, BeforeAnyFrameTheRequestIsSentAgainUnchanged) {
  ASSERT_EQ(start("GET", "/v1/stream/s?offset=now&live=sse"), FilterStatus::StopAndWait);
  answerFeed();
  body("", true);
  ASSERT_TRUE(cb_.runUntilNextRequest());
  EXPECT_EQ(cb_.last().head.path, "/v1/stream/s?offset=now&live=sse");
}

TEST_F(LiveFeedsFilterTest, StreamClosedEndsTheClientsResponseWithoutAResume) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  answerFeed();
  body(dataEvent("1") + control("5", true));
  EXPECT_TRUE(cb_.ended);
  EXPECT_EQ(cb_.body, dataEvent("1") + control("5", true));
  body("", true);
  EXPECT_FALSE(cb_.runUntilNextRequest(Millis(300)));
  EXPECT_EQ(stat("ferry_live_feed_resumes_total{cause=\"ended\"}"), 0);
}

TEST_F(LiveFeedsFilterTest, ShardMovingIsWaitedForItsRetryAfter) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  answerFeed();
  body(control("5"));
  body("", true);
  ASSERT_TRUE(cb_.runUntilNextRequest());
  cb_.last().callbacks->onInternalResponseHeaders(head(503, "application/json", "1"), false);
  EXPECT_TRUE(cb_.last().cancelled);
  const auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(cb_.runUntilNextRequest());
  EXPECT_GE(std::chrono::steady_clock::now() - asked, Millis(950));
  EXPECT_EQ(cb_.heads, 1);  // the 503 never reached the client
}

TEST_F(LiveFeedsFilterTest, PastTheDeadlineTheResponseEndsAtTheLastEvent) {
  config_.reader.resume_deadline = Millis(400);
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  answerFeed();
  body(dataEvent("1") + control("5") + dataEvent("2"));
  body("", true);
  upstream::UpstreamFailure refused;
  refused.kind = upstream::UpstreamFailure::Kind::ConnectFailed;
  while (!cb_.ended) {
    ASSERT_TRUE(cb_.runUntilNextRequest()) << "neither a new attempt nor the end";
    cb_.last().callbacks->onInternalRequestFailed(refused);
  }
  EXPECT_EQ(cb_.body, dataEvent("1") + control("5"));
  EXPECT_EQ(stat("ferry_live_feed_resume_failures_total"), 1);
  EXPECT_EQ(stat("ferry_live_feed_resumes_total{cause=\"ended\"}"), 1);
  EXPECT_TRUE(cb_.local_replies.empty());
}

TEST_F(LiveFeedsFilterTest, ANonFeedFirstAnswerGoesOutUnchangedAndIsNotResumed) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  cb_.last().callbacks->onInternalResponseHeaders(head(404, "application/json"), false);
  body("{\"error\":{}}", true);
  EXPECT_EQ(cb_.responseHead().status, 404);
  EXPECT_EQ(cb_.body, "{\"error\":{}}");
  EXPECT_TRUE(cb_.ended);
  EXPECT_FALSE(cb_.runUntilNextRequest(Millis(300)));
}

TEST_F(LiveFeedsFilterTest, AFirstAttemptThatFailsGetsTheRoutersAnswer) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  upstream::UpstreamFailure refused;
  refused.kind = upstream::UpstreamFailure::Kind::ConnectFailed;
  cb_.last().callbacks->onInternalRequestFailed(refused);
  ASSERT_EQ(cb_.failure_replies.size(), 1u);
  EXPECT_EQ(cb_.failure_replies[0].kind, upstream::UpstreamFailure::Kind::ConnectFailed);
  EXPECT_EQ(cb_.heads, 0);
}

TEST_F(LiveFeedsFilterTest, TheClientsWatermarksPauseEveryAttempt) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  answerFeed();
  filter_->onResponseWatermark(true);
  EXPECT_TRUE(cb_.last().paused);
  body(control("5"), true);
  ASSERT_TRUE(cb_.runUntilNextRequest());
  EXPECT_TRUE(cb_.last().paused);  // a resumed read starts paused while the client is full
  filter_->onResponseWatermark(false);
  EXPECT_FALSE(cb_.last().paused);
}

TEST_F(LiveFeedsFilterTest, ADrainEndsTheFeedAtTheLastEvent) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  answerFeed();
  body(dataEvent("1") + control("5") + dataEvent("2"));
  EXPECT_TRUE(filter_->onEndLiveFeed());
  EXPECT_TRUE(cb_.ended);
  EXPECT_EQ(cb_.body, dataEvent("1") + control("5"));
  EXPECT_TRUE(cb_.last().cancelled);
}

TEST_F(LiveFeedsFilterTest, TheClientLeavingCancelsTheAttemptAndTheTimer) {
  ASSERT_EQ(start(), FilterStatus::StopAndWait);
  answerFeed();
  body(control("5"), true);  // a resume is scheduled
  filter_->onDestroy();
  EXPECT_FALSE(cb_.runUntilNextRequest(Millis(300)));
}

}  // namespace
}  // namespace ferry::filters
