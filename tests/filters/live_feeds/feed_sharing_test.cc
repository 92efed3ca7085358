// Tests sharing one upstream SSE feed among the clients of one worker (docs/live-feeds.md,
// "Sharing"; filters/live_feeds/live_feeds_filter.cc, shared_feed.cc, feed_hub.cc): the first
// read that is a feed becomes the shared one; a read at its position joins without an upstream
// read of its own; any other reads on its own and joins where the two meet at a boundary; only
// reads with the same share key (credentials, listed headers) and a cursor no lower than the
// feed's share; a slow client is detached past live_feeds.subscriber_buffer and reads on from
// its last event; the feed outlives its first client and ends with its last; a resume and
// `streamClosed` reach every subscriber. Each client is a live-feeds filter on its own
// recording fake stream (tests/support/http/fake_filter_callbacks.h), all on one dispatcher and
// one worker context (one FeedHub).

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "filters/live_feeds/feed_hub.h"
#include "filters/live_feeds/live_feeds_filter.h"
#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/stats/stats.h"
#include "tests/support/http/fake_filter_callbacks.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::filters {
namespace {

using http::FilterStatus;

std::string dataEvent(const std::string& records) {
  return "event: data\ndata:[" + records + "]\n\n";
}
std::string control(const std::string& offset, bool closed = false) {
  return "event: control\ndata:{\"streamNextOffset\":\"" + offset + "\",\"streamCursor\":\"c" +
         offset + "\"" + (closed ? ",\"streamClosed\":true" : "") + "}\n\n";
}

// One client: its stream (the fake) and its live-feeds filter.
struct Client {
  explicit Client(event::Dispatcher& dispatcher) : stream(dispatcher) {}
  testing::FakeFilterCallbacks stream;
  std::unique_ptr<LiveFeedsFilter> filter;
};

class FeedSharingTest : public ::testing::Test {
 protected:
  FeedSharingTest() : stats_(store_) {
    config_.reader.stats = &stats_;
    config_.share = true;
    config_.subscriber_buffer = 1000;
    config_.is_sse_feed = [](const http::RequestHeaders& r) {
      return r.path.find("live=sse") != std::string::npos;
    };
    config_.hub = slots_.allocate<FeedHub>([this](event::WorkerContext& worker) {
      return std::make_unique<FeedHub>(worker.dispatcher(), stats_);
    });
    worker_ = std::make_unique<event::WorkerContext>(dispatcher_, slots_);
  }
  ~FeedSharingTest() override {
    for (auto& c : clients_) {
      if (c->filter) c->filter->onDestroy();
    }
  }

  // A client's read of stream s at `query` (e.g. "offset=5"), with `authorization`.
  Client& read(const std::string& query, const std::string& authorization = "Bearer t") {
    clients_.push_back(std::make_unique<Client>(dispatcher_));
    Client& c = *clients_.back();
    c.stream.request.method = "GET";
    c.stream.request.path = "/v1/stream/s?" + query + "&live=sse";
    c.stream.request.authority = "streams";
    c.stream.request.headers.add("x-request-id", "client-" + std::to_string(clients_.size()));
    c.stream.request.headers.add("authorization", authorization);
    c.filter = std::make_unique<LiveFeedsFilter>(config_, *worker_);
    c.filter->setCallbacks(c.stream);
    EXPECT_EQ(c.filter->onRequestHeaders(c.stream.request, true), FilterStatus::StopAndWait);
    return c;
  }
  static void answerFeed(testing::IssuedRequest& request) {
    auto h = std::make_unique<http::ResponseHeaders>();
    h->headers.add("content-type", "text/event-stream");
    h->headers.add("x-request-id", "upstream-id");
    request.callbacks->onInternalResponseHeaders(std::move(h), false);
  }
  static void body(testing::IssuedRequest& request, const std::string& bytes, bool end = false) {
    Buffer b;
    b.add(bytes);
    request.callbacks->onInternalResponseData(b, end);
  }
  void leave(Client& c) {
    c.filter->onDestroy();
    c.filter.reset();
  }
  int64_t stat(const std::string& series) {
    return testing::expectSeries(store_.renderPrometheus(), series);
  }
  // Deferred deletions (readers let go) run.
  void turn() {
    auto stop = dispatcher_.createTimer([this] { dispatcher_.exit(); });
    stop->fireSoon();
    dispatcher_.run();
  }

  event::Dispatcher dispatcher_;
  stats::Store store_;
  LiveFeedsStats stats_;
  LiveFeedsConfig config_;
  event::WorkerSlots slots_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::unique_ptr<event::WorkerContext> worker_;  // before the clients: the hub goes first
};

TEST_F(FeedSharingTest, AReadAtTheSharedFeedsPositionJoinsWithoutAReadOfItsOwn) {
  Client& a = read("offset=-1");
  ASSERT_EQ(a.stream.issued(), 1u);
  answerFeed(a.stream.last());
  body(a.stream.last(), dataEvent("1") + control("5"));
  EXPECT_EQ(stat("ferry_live_feed_shared_feeds"), 1);

  Client& b = read("offset=5&cursor=c5");
  EXPECT_EQ(b.stream.issued(), 0u) << "it joins the running feed";
  EXPECT_EQ(b.stream.responseHead().status, 200);
  EXPECT_EQ(b.stream.responseHead().headers.get("content-type"), "text/event-stream");
  EXPECT_FALSE(b.stream.responseHead().headers.has("x-request-id")) << "its stream adds its own";
  Client& c = read("offset=5");  // no cursor: any cursor of the feed's is not below its own
  EXPECT_EQ(c.stream.issued(), 0u);

  // Each starts as a direct read at 5 does: with the frame at 5 (not at the next append).
  EXPECT_EQ(b.stream.body, control("5"));
  body(a.stream.last(), dataEvent("2") + control("7"));
  EXPECT_EQ(a.stream.body, dataEvent("1") + control("5") + dataEvent("2") + control("7"));
  EXPECT_EQ(b.stream.body, control("5") + dataEvent("2") + control("7"));
  EXPECT_EQ(c.stream.body, b.stream.body);
  EXPECT_EQ(stat("ferry_live_feed_shared_subscribers"), 3);
  EXPECT_EQ(stat("ferry_live_feed_shared_joins_total"), 3);
  EXPECT_EQ(b.stream.info.get("feed_shared"), "true");
}

TEST_F(FeedSharingTest, AReadElsewhereReadsOnItsOwnAndJoinsWhereItMeetsTheFeed) {
  Client& a = read("offset=-1");
  answerFeed(a.stream.last());
  body(a.stream.last(), dataEvent("1") + control("5"));

  // Behind the feed: its own read, which catches up and meets the feed at 5.
  Client& b = read("offset=-1");
  ASSERT_EQ(b.stream.issued(), 1u);
  answerFeed(b.stream.last());
  body(b.stream.last(), dataEvent("1") + control("5"));
  EXPECT_TRUE(b.stream.last().cancelled) << "it met the feed at 5 and let its own read go";
  body(a.stream.last(), dataEvent("2") + control("7"));
  EXPECT_EQ(b.stream.body, dataEvent("1") + control("5") + dataEvent("2") + control("7"));

  // Ahead of where the feed is when it starts (an offset the feed reaches later), then the
  // feed's own boundary is where they meet: the hub offers it the feed.
  Client& c = read("offset=7");  // the feed is at 7: joins at once
  EXPECT_EQ(c.stream.issued(), 0u);
  Client& d = read("offset=9");
  ASSERT_EQ(d.stream.issued(), 1u);
  answerFeed(d.stream.last());
  body(d.stream.last(), dataEvent("4") + control("11"));  // d is at 11, the feed at 7
  EXPECT_FALSE(d.stream.last().cancelled);
  body(a.stream.last(), dataEvent("3,4") + control("11"));  // the feed reaches 11
  EXPECT_TRUE(d.stream.last().cancelled);
  body(a.stream.last(), dataEvent("5") + control("13"));
  EXPECT_EQ(d.stream.body, dataEvent("4") + control("11") + dataEvent("5") + control("13"));
  EXPECT_EQ(stat("ferry_live_feed_shared_subscribers"), 4);
}

TEST_F(FeedSharingTest, DifferentCredentialsOrALowerCursorNeverShare) {
  Client& a = read("offset=-1");
  answerFeed(a.stream.last());
  body(a.stream.last(), control("5"));

  Client& other = read("offset=5", "Bearer someone-else");
  ASSERT_EQ(other.stream.issued(), 1u) << "another Authorization reads on its own";
  answerFeed(other.stream.last());
  body(other.stream.last(), control("5"));
  body(a.stream.last(), control("7"));
  body(other.stream.last(), control("7"));
  EXPECT_FALSE(other.stream.last().cancelled) << "it never joins, at any position";

  Client& cursor = read("offset=7&cursor=c9");  // a cursor the feed's (c7) is not
  EXPECT_EQ(cursor.stream.issued(), 1u);
  EXPECT_FALSE(cursor.stream.last().cancelled);
  // a and other, each the first of its key's feed; the lower cursor joined nothing.
  EXPECT_EQ(stat("ferry_live_feed_shared_joins_total"), 2);
  EXPECT_EQ(stat("ferry_live_feed_shared_feeds"), 2) << "the other key's first read is its own";
}

TEST_F(FeedSharingTest, ASlowClientIsDetachedPastItsBufferAndReadsOnFromItsLastEvent) {
  Client& a = read("offset=-1");
  answerFeed(a.stream.last());
  body(a.stream.last(), control("5"));
  Client& slow = read("offset=5");
  slow.filter->onResponseWatermark(true);  // its client stops reading
  const std::string event = dataEvent(std::string(300, 'x')) + control("7");
  body(a.stream.last(), event);
  EXPECT_EQ(slow.stream.body, control("5")) << "its first frame, then units wait for it";
  slow.filter->onResponseWatermark(false);
  EXPECT_EQ(slow.stream.body, control("5") + event) << "and go out when it takes more";
  slow.filter->onResponseWatermark(true);
  for (int i = 0; i < 4; ++i)
    body(a.stream.last(), dataEvent(std::string(300, 'y')) + control("9"));
  EXPECT_EQ(stat("ferry_live_feed_detached_subscribers_total"), 1);
  ASSERT_EQ(slow.stream.issued(), 1u) << "a read of its own";
  EXPECT_EQ(slow.stream.last().head.path, "/v1/stream/s?offset=7&live=sse&cursor=c7")
      << "from the last event it was given";
  EXPECT_TRUE(slow.stream.last().paused) << "its own read waits for its client";
  EXPECT_EQ(slow.stream.body, control("5") + event) << "nothing queued went out";
  EXPECT_EQ(a.stream.body.size(), control("5").size() + event.size() + 4 * (event.size()))
      << "the feed went on for the others";
  EXPECT_EQ(stat("ferry_live_feed_shared_subscribers"), 1);
}

TEST_F(FeedSharingTest, TheFeedOutlivesItsFirstClientAndEndsWithItsLast) {
  Client& a = read("offset=-1");
  answerFeed(a.stream.last());
  body(a.stream.last(), control("5"));
  Client& b = read("offset=5");
  testing::IssuedRequest& upstream = a.stream.last();
  leave(a);
  EXPECT_FALSE(upstream.cancelled) << "the first client leaving does not end the feed";
  body(upstream, dataEvent("2") + control("7"));
  EXPECT_EQ(b.stream.body, control("5") + dataEvent("2") + control("7"));
  leave(b);
  EXPECT_TRUE(upstream.cancelled) << "the last one leaving does";
  turn();
  EXPECT_EQ(stat("ferry_live_feed_shared_feeds"), 0);
  EXPECT_EQ(stat("ferry_live_feed_shared_subscribers"), 0);
}

TEST_F(FeedSharingTest, AReadOfItsOwnBecomesTheSharedFeedWhenItsKeyHasNone) {
  Client& a = read("offset=-1");
  answerFeed(a.stream.last());
  body(a.stream.last(), control("5"));
  Client& b = read("offset=-1");
  answerFeed(b.stream.last());
  body(b.stream.last(), dataEvent("1") + control("3"));  // behind the feed: its own read
  testing::IssuedRequest& first = a.stream.last();
  leave(a);  // the shared feed ends with its last client
  EXPECT_TRUE(first.cancelled);
  turn();
  EXPECT_EQ(stat("ferry_live_feed_shared_feeds"), 0);
  body(b.stream.last(), dataEvent("2") + control("5"));
  EXPECT_FALSE(b.stream.last().cancelled) << "its read goes on, now as the key's shared feed";
  EXPECT_EQ(stat("ferry_live_feed_shared_feeds"), 1);
  Client& c = read("offset=5&cursor=c5");
  EXPECT_EQ(c.stream.issued(), 0u) << "a read at its position joins it";
  body(b.stream.last(), dataEvent("3") + control("7"));
  EXPECT_EQ(c.stream.body, control("5") + dataEvent("3") + control("7"));
  EXPECT_EQ(b.stream.info.get("feed_shared"), "true");
}

TEST_F(FeedSharingTest, AResumeAndTheStreamsEndReachEverySubscriber) {
  Client& a = read("offset=-1");
  answerFeed(a.stream.last());
  body(a.stream.last(), control("5"));
  Client& b = read("offset=5");
  body(a.stream.last(), dataEvent("2"), true);  // a hand-over: the feed ends mid-pair
  ASSERT_TRUE(a.stream.runUntilNextRequest());
  EXPECT_EQ(a.stream.issued(), 2u) << "one resumed read for both";
  EXPECT_EQ(a.stream.last().head.path, "/v1/stream/s?offset=5&live=sse&cursor=c5");
  answerFeed(a.stream.last());
  body(a.stream.last(), dataEvent("2") + control("7", true));
  EXPECT_EQ(b.stream.body, control("5") + dataEvent("2") + control("7", true));
  EXPECT_TRUE(a.stream.ended);
  EXPECT_TRUE(b.stream.ended);
  EXPECT_EQ(a.stream.info.get("feed_resumes"), "1");
  EXPECT_EQ(b.stream.info.get("feed_resumes"), "1");
  EXPECT_EQ(stat("ferry_live_feed_resumes_total{cause=\"ended\"}"), 1) << "one upstream feed";
}

TEST_F(FeedSharingTest, AReadThatIsNotAFeedIsNeverShared) {
  Client& a = read("offset=-1");
  auto h = std::make_unique<http::ResponseHeaders>();
  h->status = 404;
  a.stream.last().callbacks->onInternalResponseHeaders(std::move(h), true);
  EXPECT_EQ(a.stream.responseHead().status, 404);
  Client& b = read("offset=-1");
  EXPECT_EQ(b.stream.issued(), 1u);
  EXPECT_EQ(stat("ferry_live_feed_shared_feeds"), 0);
}

}  // namespace
}  // namespace ferry::filters
