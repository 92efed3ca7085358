// Tests proxy/http/stream_log_record.cc: what a stream's access log record says about who
// answered, the bytes both ways and the status, and that every ended stream is counted.

#include "proxy/http/stream_log_record.h"

#include <gtest/gtest.h>

#include "proxy/stats/stats.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::http {
namespace {

RequestHeaders request() {
  RequestHeaders head;
  head.method = "POST";
  head.path = "/v1/stream/s1";
  head.protocol = "HTTP/1.1";
  head.headers.add("x-request-id", "id-7");
  head.headers.add("user-agent", "ua/1");
  return head;
}

TEST(StreamLogRecordTest, TheUpstreamThatAnsweredIsTheAttemptWhoseHeadArrived) {
  StreamLogRecord record;
  const RequestHeaders head = request();
  record.attemptTo("b");  // a replay to owner b; its head has not come yet
  EXPECT_EQ(record.entry(head, "ok", {}, {}, {}).upstream, "") << "nobody answered yet";
  EXPECT_LT(record.entry(head, "ok", {}, {}, {}).upstream_ttfb.count(), 0);
  record.upstreamAnswered();
  const access_log::Entry e = record.entry(head, "ok", "127.0.0.1:5000", "peer-id", {});
  EXPECT_EQ(e.upstream, "b");
  EXPECT_GE(e.upstream_ttfb.count(), 0);
  EXPECT_EQ(e.client, "127.0.0.1:5000");
  EXPECT_EQ(e.peer, "peer-id");
  EXPECT_EQ(e.request_id, "id-7");
  EXPECT_EQ(e.user_agent, "ua/1");
  EXPECT_EQ(e.method, "POST");
  EXPECT_EQ(e.path, "/v1/stream/s1");
}

TEST(StreamLogRecordTest, ALocalReplyForgetsTheUpstreamThatAnsweredFirst) {
  StreamLogRecord record;
  record.upstreamAnswered();  // the local instance's head came, then ferry answered itself
  record.answeredLocally();
  const access_log::Entry e = record.entry(request(), "ok", {}, {}, {});
  EXPECT_EQ(e.upstream, "");
  EXPECT_LT(e.upstream_ttfb.count(), 0);
}

TEST(StreamLogRecordTest, BytesAddUpAndTheStatusIsTheLastSet) {
  StreamLogRecord record;
  record.addRequestBytes(3);
  record.addRequestBytes(4);
  record.addResponseBytes(10);
  record.setStatus(409);
  record.setStatus(200);  // a replay's answer replaced the held 409
  record.info().set("forward", "forwarded");
  const access_log::Entry e = record.entry(request(), "cut", {}, {}, {});
  EXPECT_EQ(e.request_bytes, 7u);
  EXPECT_EQ(e.response_bytes, 10u);
  EXPECT_EQ(e.status, 200);
  EXPECT_EQ(e.end, "cut");
  ASSERT_NE(e.info, nullptr);
  EXPECT_EQ(e.info, &record.info());
}

TEST(StreamLogRecordTest, WriteCountsTheStreamEvenWithoutAnAccessLog) {
  stats::Store store;
  stats::ProxyStats stats(store);
  StreamLogRecord record;
  record.setStatus(204);
  record.write(request(), "ok", {}, {}, stats, nullptr);
  EXPECT_EQ(ferry::testing::statOf(store, "ferry_requests_completed_total",
                                   {{"method", "POST"}, {"class", "2xx"}}),
            1);
}

}  // namespace
}  // namespace ferry::http
