// "When all hold": a request a non-owner answered 409 + Streams-Replay-To is sent once to the
// owner, marked Streams-Forwarded; the client gets the owner's answer plus
// Streams-Forwarded-To, never the 409. Waiting reads and live feeds stream unbuffered.
#include "tests/integration/forwarding/forwarding_test.h"

namespace ferry::fwdtest {
namespace {

using ForwardTest = OverTransports<ForwardingTest>;
FORWARDING_OVER_TRANSPORTS(ForwardTest);

// Every request below goes to inst-1's ferry for a stream inst-2 owns.
constexpr size_t kEntry = 0;
constexpr size_t kOwner = 1;

TEST_P(ForwardTest, RawAppendIsAppliedOnceByTheOwner) {
  const std::string s = cell_->streamOwnedBy(kOwner);
  createAt(kOwner, s);
  auto r = viaFerry(cell_->ferry(kEntry), "POST", "/v1/stream/" + s,
                    {{"content-type", "text/plain"}}, "hello owner");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  EXPECT_EQ(r->headerOr("prisma-streams-origin"), "inst-2");

  auto applied = appliedAt(kOwner, s);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].bytes, 11u);
  EXPECT_EQ(applied[0].body_sha256, sha256Hex("hello owner"));
  EXPECT_EQ(applied[0].forwarded_by, "inst-1");
  EXPECT_TRUE(appliedAt(kEntry, s).empty());
  // It was a forward: the local instance said 409 first.
  EXPECT_NE(cell_->emulator(kEntry).requests().find("\"409\":1"), std::string::npos);
  EXPECT_EQ(cell_->ferry(kEntry).stat(perOwner("ferry_forward_attempts_total", "inst-2")), 1);
  EXPECT_EQ(cell_->ferry(kEntry).stat(perOwner("ferry_forward_completed_total", "inst-2")), 1);
  if (isHttp2(transport())) {
    // The client's connection to inst-1's ferry was HTTP/2.
    EXPECT_EQ(cell_->ferry(kEntry).stat("ferry_downstream_http2_connections_total"), 1);
  }
  // The forward to inst-2's ferry is HTTP/2 exactly when the cell forwards over HTTP/2.
  EXPECT_EQ(cell_->ferry(kOwner).stat("ferry_downstream_http2_connections_total"),
            ownerHttp2(transport()) ? 1 : 0);
  if (isTls(transport())) {
    // Both hops were verified TLS: the client's connection to inst-1's ferry, and inst-1's
    // ferry's forward to inst-2's ferry (the create went to the instance directly).
    const std::string ok = R"(ferry_downstream_tls_handshakes_total{outcome="ok"})";
    EXPECT_EQ(cell_->ferry(kEntry).stat(ok), 1);
    EXPECT_EQ(cell_->ferry(kOwner).stat(ok), 1);
    EXPECT_EQ(cell_->ferry(kEntry).stat("ferry_upstream_tls_handshakes_total"), 1);
  }
}

TEST_P(ForwardTest, ProductCreateAndAppendAreForwarded) {
  const std::string s = cell_->streamOwnedBy(kOwner, "p");
  Ferry& entry = cell_->ferry(kEntry);
  auto create = viaFerry(entry, "PUT", "/v1/streams/" + s, {});
  ASSERT_TRUE(create.isOk()) << create.status().message();
  EXPECT_EQ(create->status, 201) << create->body;
  EXPECT_EQ(create->headerOr("streams-forwarded-to"), "inst-2");

  const std::string record = R"({"order":42})";
  auto r = viaFerry(entry, "POST", "/v1/streams/" + s + "/records",
                    {{"content-type", "application/json"}}, record);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  EXPECT_NE(r->body.find("\"count\":1"), std::string::npos) << r->body;

  auto applied = appliedAt(kOwner, s);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].forwarded_by, "inst-1");
  EXPECT_TRUE(appliedAt(kEntry, s).empty());
}

TEST_P(ForwardTest, CreateWithBodyIsForwarded) {
  const std::string s = cell_->streamOwnedBy(kOwner, "c");
  auto r = viaFerry(cell_->ferry(kEntry), "PUT", "/v1/stream/" + s,
                    {{"content-type", "text/plain"}}, "first");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  EXPECT_FALSE(r->headerOr("location").empty());

  auto head = httpRequest(cell_->emulator(kOwner).port(), "HEAD", "/v1/stream/" + s);
  ASSERT_TRUE(head.isOk());
  EXPECT_EQ(head->status, 200);  // the owner has it
  auto applied = appliedAt(kOwner, s);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].body_sha256, sha256Hex("first"));
  EXPECT_EQ(applied[0].forwarded_by, "inst-1");
}

TEST_P(ForwardTest, LongPollWaitsAtTheOwner) {
  const std::string s = cell_->streamOwnedBy(kOwner, "lp");
  createAt(kOwner, s);
  const std::string tail = appendAt(kOwner, s, "a");
  CellClient c;
  ASSERT_TRUE(connectTo(c, cell_->ferry(kEntry)).isOk());
  ASSERT_TRUE(
      c.sendRequest("GET", "/v1/stream/" + s + "?offset=" + tail + "&live=long-poll&timeout=20")
          .isOk());
  // The forwarded read is parked at the owner (its ferry holds it) before the append that
  // answers it.
  ASSERT_GE(cell_->ferry(kOwner).waitForStat("ferry_streams_active", 1), 1);
  appendAt(kOwner, s, "b");
  auto r = c.readResponse(Ms(10000));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "b");
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
}

TEST_P(ForwardTest, SseFeedStreamsEventsBeforeTheFeedEnds) {
  const std::string s = cell_->streamOwnedBy(kOwner, "sse");
  createAt(kOwner, s);
  appendAt(kOwner, s, "one");
  CellClient c;
  ASSERT_TRUE(connectTo(c, cell_->ferry(kEntry)).isOk());
  ASSERT_TRUE(c.sendRequest("GET", "/v1/stream/" + s + "?offset=-1&live=sse").isOk());
  auto head = c.readResponseHead(Ms(5000));
  ASSERT_TRUE(head.isOk()) << head.status().message();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headerOr("content-type"), "text/event-stream");
  EXPECT_EQ(head->headerOr("streams-forwarded-to"), "inst-2");

  // The feed is open (it ends only when the stream is deleted below): every event must reach
  // the client as it is sent.
  auto first = c.readBodyUntil("\n\n", Ms(5000));
  ASSERT_TRUE(first.isOk()) << first.status().message();
  EXPECT_NE(first->find("event: data"), std::string::npos) << *first;
  auto control = c.readBodyUntil("\n\n", Ms(5000));
  ASSERT_TRUE(control.isOk()) << control.status().message();
  EXPECT_NE(control->find("event: control"), std::string::npos) << *control;

  appendAt(kOwner, s, "two");
  auto second = c.readBodyUntil("\n\n", Ms(5000));
  ASSERT_TRUE(second.isOk()) << second.status().message();
  EXPECT_NE(second->find("event: data"), std::string::npos) << *second;

  // Deleting the stream ends the feed: a closed control frame, then the end of the response.
  auto del = httpRequest(cell_->emulator(kOwner).port(), "DELETE", "/v1/stream/" + s);
  ASSERT_TRUE(del.isOk());
  auto rest = c.readResponse(Ms(5000));
  ASSERT_TRUE(rest.isOk()) << rest.status().message();
  EXPECT_NE(rest->body.find("streamClosed"), std::string::npos) << rest->body;
}

TEST_P(ForwardTest, ProductLongPollAndSseAreForwarded) {
  const std::string s = cell_->streamOwnedBy(kOwner, "plp");
  auto create = httpRequest(cell_->emulator(kOwner).port(), "PUT", "/v1/streams/" + s, {});
  ASSERT_TRUE(create.isOk() && create->status == 201);
  Ferry& entry = cell_->ferry(kEntry);

  CellClient feed;
  ASSERT_TRUE(connectTo(feed, entry).isOk());
  ASSERT_TRUE(feed.sendRequest("GET", "/v1/streams/" + s + "/records:sse").isOk());
  auto head = feed.readResponseHead(Ms(5000));
  ASSERT_TRUE(head.isOk()) << head.status().message();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headerOr("streams-forwarded-to"), "inst-2");
  auto control = feed.readBodyUntil("\n\n", Ms(5000));
  ASSERT_TRUE(control.isOk()) << control.status().message();
  EXPECT_NE(control->find("event: control"), std::string::npos) << *control;

  CellClient poll;
  ASSERT_TRUE(connectTo(poll, entry).isOk());
  ASSERT_TRUE(poll.sendRequest("GET", "/v1/streams/" + s + "/records:long-poll?timeout=20").isOk());
  // Both waits are held at the owner's side before the record that answers them.
  ASSERT_GE(cell_->ferry(kOwner).waitForStat("ferry_streams_active", 2), 2);
  auto append = httpRequest(cell_->emulator(kOwner).port(), "POST", "/v1/streams/" + s + "/records",
                            {{"content-type", "application/json"}}, R"({"k":1})");
  ASSERT_TRUE(append.isOk() && append->status == 200);

  auto r = poll.readResponse(Ms(10000));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  EXPECT_NE(r->body.find(R"({"k":1})"), std::string::npos) << r->body;
  auto data = feed.readBodyUntil("\n\n", Ms(5000));
  ASSERT_TRUE(data.isOk()) << data.status().message();
  EXPECT_NE(data->find(R"({"k":1})"), std::string::npos) << *data;

  // A live feed ends when its client leaves (closes the connection; over HTTP/2 resets the
  // stream): counted apart from clients that left before the owner answered.
  feed.leave();
  Ferry& entry_ferry = cell_->ferry(kEntry);
  EXPECT_EQ(entry_ferry.waitForStat("ferry_forward_cancelled_total{phase=\"during_response\"}", 1),
            1);
  EXPECT_EQ(entry_ferry.stat("ferry_forward_cancelled_total{phase=\"before_response\"}"), 0);
}

// HTTP/2 only: forwards are streams of one client connection. A live feed, a long-poll and
// appends, all forwarded, share it; resetting the feed's stream cancels that forward alone.
using ForwardHttp2Test = OverTransports<ForwardingTest>;
FORWARDING_OVER_HTTP2_TRANSPORTS(ForwardHttp2Test);

TEST_P(ForwardHttp2Test, ForwardsMultiplexOnOneConnection) {
  const std::string s = cell_->streamOwnedBy(kOwner, "mux");
  createAt(kOwner, s);
  const std::string tail = appendAt(kOwner, s, "a");
  Ferry& entry = cell_->ferry(kEntry);
  testing::Http2Client c;
  c.setTls(cell_->clientTls() ? std::optional(*cell_->clientTls()) : std::nullopt);
  ASSERT_TRUE(c.connect(entry.port()).isOk());

  auto feed = c.submitRequest("GET", "/v1/stream/" + s + "?offset=-1&live=sse");
  ASSERT_TRUE(feed.isOk());
  auto head = c.readResponseHead(*feed);
  ASSERT_TRUE(head.isOk()) << head.status().message();
  EXPECT_EQ(head->headerOr("streams-forwarded-to"), "inst-2");
  auto first = c.readBodyUntil(*feed, "\n\n");
  ASSERT_TRUE(first.isOk()) << first.status().message();
  EXPECT_NE(first->find("event: data"), std::string::npos) << *first;

  auto poll =
      c.submitRequest("GET", "/v1/stream/" + s + "?offset=" + tail + "&live=long-poll&timeout=20");
  ASSERT_TRUE(poll.isOk());
  // Both waits are held at the owner's side before the appends that answer them.
  ASSERT_GE(cell_->ferry(kOwner).waitForStat("ferry_streams_active", 2), 2);
  std::vector<int32_t> appends;
  for (int i = 0; i < 3; ++i) {
    auto id = c.submitRequest("POST", "/v1/stream/" + s, {{"content-type", "text/plain"}},
                              "x" + std::to_string(i));
    ASSERT_TRUE(id.isOk());
    appends.push_back(*id);
  }
  std::string last_offset;
  for (int32_t id : appends) {
    auto r = c.readResponse(id, Ms(10000));
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->status, 204) << r->body;
    EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
    last_offset = std::max(last_offset, r->headerOr("stream-next-offset"));
  }
  auto answered = c.readResponse(*poll, Ms(10000));
  ASSERT_TRUE(answered.isOk()) << answered.status().message();
  EXPECT_EQ(answered->status, 200);
  EXPECT_EQ(answered->body.substr(0, 1), "x") << answered->body;
  // The feed catches up with the three appends (a control event names the offset after them).
  auto event = c.readBodyUntil(*feed, "\"streamNextOffset\":\"" + last_offset + "\"");
  ASSERT_TRUE(event.isOk()) << event.status().message()
                            << "; the feed so far: " << c.stream(*feed).response.body;

  // The client resets the feed's stream: that forward is cancelled, the connection serves on.
  ASSERT_TRUE(c.resetStream(*feed).isOk());
  EXPECT_EQ(entry.waitForStat("ferry_forward_cancelled_total{phase=\"during_response\"}", 1), 1);
  auto after = c.submitRequest("POST", "/v1/stream/" + s, {{"content-type", "text/plain"}}, "y");
  ASSERT_TRUE(after.isOk());
  auto r = c.readResponse(*after, Ms(10000));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 204) << r->body;
  EXPECT_FALSE(c.stream(*feed).reset_by_peer.has_value());

  auto applied = appliedAt(kOwner, s);
  ASSERT_EQ(applied.size(), 5u);  // "a" directly, then 4 forwarded appends
  for (size_t i = 1; i < applied.size(); ++i) EXPECT_EQ(applied[i].forwarded_by, "inst-1");
  EXPECT_EQ(entry.stat("ferry_downstream_http2_connections_total"), 1);
  EXPECT_EQ(entry.stat("ferry_downstream_connections_total"), 1);
  EXPECT_EQ(entry.stat(perOwner("ferry_forward_completed_total", "inst-2")), 5);
}

// 8 MiB forwarded to an HTTP/2 client: far past the client's 64 KiB stream and connection
// windows (RFC 9113 section 6.9), so ferry sends as the client's WINDOW_UPDATEs allow, while
// the owner's side is HTTP/1.1 with its own backpressure.
TEST_P(ForwardHttp2Test, LargeForwardedReadArrivesIntact) {
  const std::string s = cell_->streamOwnedBy(kOwner, "big");
  createAt(kOwner, s);
  const std::string body = patternBody(8 << 20, 3);
  auto put = httpRequest(cell_->emulator(kOwner).port(), "POST", "/v1/stream/" + s,
                         {{"content-type", "text/plain"}}, body, Ms(30000));
  ASSERT_TRUE(put.isOk() && put->status / 100 == 2);
  auto r =
      viaFerry(cell_->ferry(kEntry), "GET", "/v1/stream/" + s + "?offset=-1", {}, {}, Ms(60000));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
  ASSERT_EQ(r->body.size(), body.size());
  EXPECT_EQ(sha256Hex(r->body), sha256Hex(body));
}

}  // namespace
}  // namespace ferry::fwdtest
