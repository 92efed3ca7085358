// app/streams_live_feeds.h: which reads the live-feeds filter serves. Streams' SSE reads on both
// routes, never a long-poll or plain read, and never one another ferry forwarded here (that
// ferry resumes it; two ferries resuming one feed would each retry the other's answers).
#include "app/streams_live_feeds.h"

#include <gtest/gtest.h>

namespace ferry::app {
namespace {

http::RequestHeaders get(const std::string& path) {
  http::RequestHeaders r;
  r.method = "GET";
  r.path = path;
  return r;
}

TEST(StreamsLiveFeedsTest, SseReadsOfBothRoutesAreResumable) {
  const auto sse = streamsSseRules();
  EXPECT_TRUE(isResumableStreamsFeed(sse, get("/v1/stream/s?offset=-1&live=sse")));
  EXPECT_TRUE(isResumableStreamsFeed(sse, get("/v1/streams/s/records:sse")));
  EXPECT_FALSE(isResumableStreamsFeed(sse, get("/v1/stream/s?offset=-1&live=long-poll")));
  EXPECT_FALSE(isResumableStreamsFeed(sse, get("/v1/streams/s/records:long-poll")));
  EXPECT_FALSE(isResumableStreamsFeed(sse, get("/v1/stream/s?offset=-1")));
}

TEST(StreamsLiveFeedsTest, AForwardedReadIsLeftToTheFerryThatForwardedIt) {
  const auto sse = streamsSseRules();
  http::RequestHeaders forwarded = get("/v1/stream/s?offset=-1&live=sse");
  forwarded.headers.add("streams-forwarded", "inst-1");
  EXPECT_FALSE(isResumableStreamsFeed(sse, forwarded));
}

}  // namespace
}  // namespace ferry::app
