// Tests filters/router/live_feed.cc with the rules the composition root gives the router
// (app/streams_live_feeds.h): which requests are Streams' waiting reads and live feeds
// (no response-head timeout for them), and that without rules nothing is.
#include "filters/router/live_feed.h"

#include <gtest/gtest.h>

#include "app/streams_live_feeds.h"

namespace ferry::filters {
namespace {

bool isLiveFeed(std::string_view method, std::string_view target) {
  static const LiveFeedRules rules = app::streamsLiveFeedRules();
  return rules.matches(method, target);
}

TEST(LiveFeedTest, RecognisesLongPollsAndSseFeeds) {
  for (const char* target :
       {"/v1/stream/s?offset=-1&live=long-poll", "/v1/stream/s?live=sse",
        "/v1/stream/s?live=long-poll&timeout=20", "/v1/streams/s/records:long-poll?cursor=3",
        "/v1/streams/s/records:sse", "/v1/stream/s?live=long%2Dpoll", "/v1/stream/s?%6Cive=sse",
        "/v1/streams/s/records%3Asse"}) {
    EXPECT_TRUE(isLiveFeed("GET", target)) << target;
  }
}

TEST(LiveFeedTest, OtherRequestsAreNot) {
  for (const char* target :
       {"/v1/stream/s", "/v1/stream/s?offset=-1", "/v1/stream/s?live=", "/v1/stream/s?live=poll",
        "/v1/stream/s?alive=sse", "/v1/stream/s?live=ssex", "/v1/stream/sse",
        "/v1/streams/s/records", "/v1/streams/s/records:sse/x", "/v1/stream/s?x=1&live",
        "/v1/stream/s?offset=live=sse", "/v1/stream/s?live=sse%"}) {
    EXPECT_FALSE(isLiveFeed("GET", target)) << target;
  }
  // An append is never a live feed, whatever its target says.
  EXPECT_FALSE(isLiveFeed("POST", "/v1/stream/s?live=sse"));
  EXPECT_FALSE(isLiveFeed("POST", "/v1/streams/s/records:long-poll"));
}

// The router knows no URL convention of its own.
TEST(LiveFeedTest, NoRulesNoLiveFeeds) {
  const LiveFeedRules none;
  EXPECT_FALSE(none.matches("GET", "/v1/stream/s?live=sse"));
  EXPECT_FALSE(none.matches("GET", "/v1/streams/s/records:sse"));
}

}  // namespace
}  // namespace ferry::filters
