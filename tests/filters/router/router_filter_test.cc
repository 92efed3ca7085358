// The router and its upstream requests against a scripted pool (upstream::ConnectionPool), no
// sockets: what it asks of the pool per attempt, what it encodes, how the answer and failures
// reach the stream, the response-head clock, and that a replay is a new attempt. The stream is
// the recording fake (tests/support/http/fake_filter_callbacks.h).

#include "filters/router/router_filter.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "filters/router/router_stats.h"
#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "tests/support/http/fake_filter_callbacks.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::filters {
namespace {

using upstream::UpstreamFailure;

// One stream the router asked for: the test makes it ready, answers it, fails it.
class ScriptedStream : public upstream::UpstreamStream, public http::RequestEncoder {
 public:
  ScriptedStream(http::ResponseDecoder& decoder, upstream::UpstreamStreamCallbacks& callbacks,
                 const upstream::RequestSource& source)
      : decoder(decoder), callbacks(callbacks), source(source) {}

  // upstream::UpstreamStream
  void readDisable(bool disable) override { read_disables.push_back(disable); }
  uint64_t requestBytesSent() const override { return bytes_sent; }
  void resetStream() override { ++resets; }
  // http::RequestEncoder
  void encodeHeaders(const http::RequestHeaders& headers, bool end_stream) override {
    head = headers;
    head_address = &headers;
    bytes_sent += 1;
    ended = end_stream;
    if (end_stream) callbacks.onRequestSent();
  }
  void encodeData(Buffer& data, bool end_stream) override {
    body += data.toString();
    data.clear();
    ended = end_stream;
    if (end_stream) callbacks.onRequestSent();
  }

  void ready() { callbacks.onPoolReady(*this, *this); }
  void respond(int status, bool end_stream) {
    auto h = std::make_unique<http::ResponseHeaders>();
    h->status = status;
    decoder.onResponseHeaders(std::move(h), end_stream);
  }

  http::ResponseDecoder& decoder;
  upstream::UpstreamStreamCallbacks& callbacks;
  const upstream::RequestSource& source;
  http::RequestHeaders head;
  const http::RequestHeaders* head_address = nullptr;
  std::string body;
  bool ended = false;
  uint64_t bytes_sent = 0;
  int resets = 0;
  std::vector<bool> read_disables;
};

// A pool per target that records every stream asked of it and leaves them waiting.
class ScriptedPool : public upstream::ConnectionPool {
 public:
  explicit ScriptedPool(upstream::UpstreamTarget target) : target_(std::move(target)) {}
  upstream::UpstreamStream* newStream(http::ResponseDecoder& decoder,
                                      upstream::UpstreamStreamCallbacks& callbacks,
                                      const upstream::RequestSource& source) override {
    streams.push_back(std::make_unique<ScriptedStream>(decoder, callbacks, source));
    return streams.back().get();
  }
  const upstream::UpstreamTarget& target() const override { return target_; }
  std::vector<std::unique_ptr<ScriptedStream>> streams;

 private:
  upstream::UpstreamTarget target_;
};

upstream::UpstreamTarget target(const std::string& name, uint16_t port) {
  upstream::UpstreamTarget t;
  t.name = name;
  t.scheme = "http";
  t.host = "127.0.0.1";
  t.port = port;
  return t;
}

class RouterFilterTest : public ::testing::Test {
 protected:
  RouterFilterTest()
      : stats_(store_),
        upstreams_([this](const upstream::UpstreamTarget& t) {
          auto pool = std::make_unique<ScriptedPool>(t);
          pools_[t.port] = pool.get();
          return pool;
        }),
        stream_(dispatcher_) {
    stream_.forbid(testing::FakeFilterCallbacks::Call::InternalRequest,
                   "the router issues no internal request");
    config_.local = target("local", 8080);
    stream_.local = config_.local;
    stream_.request.method = "POST";
    stream_.request.path = "/v1/stream/s1";
    stream_.request.authority = "ferry.test";
  }
  void start(bool end_stream) {
    router_ = std::make_unique<RouterFilter>(config_, upstreams_, stats_);
    router_->setCallbacks(stream_);
    router_->setTerminalCallbacks(stream_);
    router_->onRequestHeaders(stream_.request, end_stream);
  }
  ScriptedStream& stream(uint16_t port, size_t i = 0) { return *pools_.at(port)->streams.at(i); }
  // Runs the loop until the stream got a failure, or 5 s.
  void runUntilFailure() {
    const size_t before = stream_.upstream_failures.size();
    stream_.runUntil([&] { return stream_.upstream_failures.size() > before; },
                     event::Millis(5000));
  }
  void TearDown() override {
    if (router_) router_->onDestroy();
  }

  event::Dispatcher dispatcher_;
  stats::Store store_;
  RouterStats stats_;
  std::map<uint16_t, ScriptedPool*> pools_;
  upstream::WorkerUpstreams upstreams_;
  testing::FakeFilterCallbacks stream_;
  RouterConfig config_;
  std::unique_ptr<RouterFilter> router_;
};

// The stream's own head goes out as it is (no copy), then the body as it arrives; the answer
// goes back to the stream; at the end the router lets go of the stream once.
TEST_F(RouterFilterTest, SendsTheStreamsHeadAndBodyAndHandsBackTheAnswer) {
  start(false);
  Buffer early;
  early.add("ab");
  router_->onRequestBody(early, false);  // before the pool is ready: waits
  ScriptedStream& s = stream(8080);
  s.ready();
  EXPECT_EQ(s.head_address, &stream_.request);
  EXPECT_EQ(&s.source.requestHead(), &stream_.request);
  EXPECT_EQ(s.body, "ab");
  Buffer rest;
  rest.add("cd");
  router_->onRequestBody(rest, true);
  EXPECT_EQ(s.body, "abcd");
  EXPECT_TRUE(s.ended);
  s.respond(200, true);
  EXPECT_EQ(stream_.upstream_statuses, std::vector<int>{200});
  router_->resetUpstream();
  router_->resetUpstream();
  EXPECT_EQ(s.resets, 1);
}

// A replay is a new attempt: the old stream is let go, the owner's pool is asked, the head
// gets the replay's fields (no Expect), and the kept body goes first.
TEST_F(RouterFilterTest, ReplayIsANewAttemptToTheNewTarget) {
  stream_.request.headers.add("expect", "100-continue");
  start(true);
  ScriptedStream& local = stream(8080);
  local.ready();
  local.respond(409, true);
  http::HeaderMap extra;
  extra.add("streams-forwarded", "inst-1");
  Buffer body;
  body.add("kept");
  router_->replay({target("owner", 9090), extra}, body);
  EXPECT_EQ(local.resets, 1);
  ScriptedStream& owner = stream(9090);
  owner.ready();
  EXPECT_EQ(owner.head.headers.get("streams-forwarded"), "inst-1");
  EXPECT_FALSE(owner.head.headers.has("expect"));
  EXPECT_EQ(&owner.source.requestHead(), owner.head_address);  // the pool may send it again
  EXPECT_EQ(owner.body, "kept");
  EXPECT_TRUE(owner.ended);
  owner.respond(200, true);
  EXPECT_EQ(stream_.upstream_statuses, (std::vector<int>{409, 200}));
}

// A parsed head (wire-safe: its encoder checks no field again) with a route's fields that
// are fit for HTTP/1 too stays wire-safe; unchecked route fields make the encoder check them.
TEST_F(RouterFilterTest, ARoutesCheckedFieldsKeepAParsedHeadWireSafe) {
  stream_.request.headers.add("user-agent", "test");
  stream_.request.headers.markWireSafe();
  start(true);
  stream(8080).ready();
  stream(8080).respond(409, true);
  http::HeaderMap checked;
  checked.add("streams-forwarded", "inst-1");
  checked.markWireSafe();
  Buffer none;
  router_->replay({target("owner", 9090), checked}, none);
  ScriptedStream& owner = stream(9090);
  owner.ready();
  EXPECT_EQ(owner.head.headers.get("streams-forwarded"), "inst-1");
  EXPECT_TRUE(owner.head.headers.wireSafe());
  owner.respond(409, true);
  http::HeaderMap unchecked;
  unchecked.add("streams-forwarded", "inst-1");
  router_->replay({target("other", 9091), unchecked}, none);
  ScriptedStream& other = stream(9091);
  other.ready();
  EXPECT_EQ(other.head.headers.get("streams-forwarded"), "inst-1");
  EXPECT_FALSE(other.head.headers.wireSafe());
}

// A route chosen before the head (owner routing): the first attempt goes to the route's target
// with its fields, keeping the client's Expect (its 100 Continue comes from there); a replay to
// the local target then goes to the local instance with the kept body and no extra fields nor
// Expect.
TEST_F(RouterFilterTest, ARoutedFirstAttemptGoesToTheRouteAndReplaysToLocal) {
  stream_.request.headers.add("expect", "100-continue");
  http::UpstreamRoute route{target("inst-2", 9090), {}};
  route.extra_headers.add("streams-forwarded", "inst-1");
  router_ = std::make_unique<RouterFilter>(config_, upstreams_, stats_);
  router_->setCallbacks(stream_);
  router_->setTerminalCallbacks(stream_);
  Buffer none;
  router_->replay(route, none);  // from a filter's onRequestHeaders
  router_->onRequestHeaders(stream_.request, true);
  EXPECT_EQ(pools_.count(8080), 0u);  // the local instance was not asked
  ScriptedStream& owner = stream(9090);
  owner.ready();
  EXPECT_EQ(owner.head.headers.get("streams-forwarded"), "inst-1");
  EXPECT_EQ(owner.head.headers.get("expect"), "100-continue");
  owner.respond(409, true);
  Buffer body;
  body.add("kept");
  EXPECT_EQ(&router_->localTarget(), &config_.local);
  router_->replay({router_->localTarget(), {}}, body);
  EXPECT_EQ(owner.resets, 1);
  ScriptedStream& local = stream(8080);
  local.ready();
  EXPECT_FALSE(local.head.headers.has("streams-forwarded"));
  EXPECT_FALSE(local.head.headers.has("expect"));
  EXPECT_EQ(local.body, "kept");
  local.respond(204, true);
  EXPECT_EQ(stream_.upstream_statuses, (std::vector<int>{409, 204}));
}

// Once the request's end is with the upstream, no head within response_head_timeout is a
// ResponseHeadTimeout failure, and the stream is let go.
TEST_F(RouterFilterTest, NoResponseHeadInTimeIsAResponseHeadTimeout) {
  config_.response_head_timeout = event::Millis(1);
  start(true);
  ScriptedStream& s = stream(8080);
  s.ready();
  runUntilFailure();
  ASSERT_EQ(stream_.upstream_failures.size(), 1u);
  EXPECT_EQ(stream_.upstream_failures[0].kind, UpstreamFailure::Kind::ResponseHeadTimeout);
  EXPECT_TRUE(stream_.upstream_failures[0].request_bytes_sent);
  EXPECT_EQ(s.resets, 1);
  EXPECT_EQ(ferry::testing::statOf(store_, "ferry_upstream_response_head_timeouts_total"), 1);
}

// While the pool sends the request again on a fresh connection (no byte of it on any
// connection), the clock does not run out: the retry's end starts it again.
TEST_F(RouterFilterTest, ResponseHeadClockWaitsForAPoolInternalRetry) {
  config_.response_head_timeout = event::Millis(1);
  start(true);
  ScriptedStream& s = stream(8080);
  s.ready();
  s.bytes_sent = 0;  // the pool took the request back to send it on a fresh connection
  auto later = dispatcher_.createTimer([this] { dispatcher_.exit(); });
  later->enable(event::Millis(20));
  dispatcher_.run();
  EXPECT_TRUE(stream_.upstream_failures.empty());
  s.bytes_sent = 10;  // sent again
  s.callbacks.onRequestSent();
  runUntilFailure();
  ASSERT_EQ(stream_.upstream_failures.size(), 1u);
  EXPECT_EQ(stream_.upstream_failures[0].kind, UpstreamFailure::Kind::ResponseHeadTimeout);
}

// A failure of the stream reaches the stream with what the router knows (response started).
TEST_F(RouterFilterTest, StreamResetReachesTheStreamWithResponseStarted) {
  start(true);
  ScriptedStream& s = stream(8080);
  s.ready();
  s.respond(200, false);
  UpstreamFailure cut;
  cut.kind = UpstreamFailure::Kind::Reset;
  cut.request_bytes_sent = true;
  s.callbacks.onStreamReset(cut);
  ASSERT_EQ(stream_.upstream_failures.size(), 1u);
  EXPECT_TRUE(stream_.upstream_failures[0].response_started);
}

// Backpressure both ways goes through the attempt: the client's full buffer pauses reading
// the response (also for an attempt that becomes ready later), the upstream's pauses the body.
TEST_F(RouterFilterTest, BackpressureGoesThroughTheAttempt) {
  start(false);
  router_->pauseResponse(true);
  ScriptedStream& s = stream(8080);
  s.ready();
  EXPECT_EQ(s.read_disables, std::vector<bool>{true});
  router_->pauseResponse(false);
  EXPECT_EQ(s.read_disables, (std::vector<bool>{true, false}));
  s.callbacks.onAboveWriteBufferHighWatermark();
  s.callbacks.onBelowWriteBufferLowWatermark();
  EXPECT_EQ(stream_.request_body_pauses, (std::vector<bool>{true, false}));
}

// ---- The failure policy: what an unclaimed failure becomes (upstream_failure_reply.h) --------

UpstreamFailure failure(UpstreamFailure::Kind kind, bool sent, std::string detail = "boom") {
  UpstreamFailure f;
  f.kind = kind;
  f.request_bytes_sent = sent;
  f.detail = std::move(detail);
  return f;
}

// The router fails the attempt as the pool would report it, and answers what the stream
// (its filters) did not.
class RouterFailureTest : public RouterFilterTest {
 protected:
  void fail(const UpstreamFailure& f) {
    start(true);
    stream(8080).callbacks.onPoolFailure(f);
  }
};

TEST_F(RouterFailureTest, ConnectFailureAnswers503WithRetryAfter) {
  fail(failure(UpstreamFailure::Kind::ConnectFailed, false, "connection refused"));
  ASSERT_EQ(stream_.upstream_failures.size(), 1u) << "filters are asked first";
  ASSERT_EQ(stream_.local_replies.size(), 1u);
  const auto& reply = stream_.local_replies[0];
  EXPECT_EQ(reply.status, 503);
  EXPECT_EQ(reply.extra.get("retry-after"), "1");
  EXPECT_EQ(reply.code, "upstream_unavailable");
  EXPECT_EQ(reply.message, "the upstream cannot be reached: connection refused");
}

TEST_F(RouterFailureTest, ResetAfterSendAnswers502OutcomeUnknown) {
  fail(failure(UpstreamFailure::Kind::Reset, true));
  ASSERT_EQ(stream_.local_replies.size(), 1u);
  const auto& reply = stream_.local_replies[0];
  EXPECT_EQ(reply.status, 502);
  EXPECT_FALSE(reply.extra.has("retry-after")) << "must not invite a replay";
  EXPECT_EQ(reply.code, "upstream_outcome_unknown");
  EXPECT_EQ(ferry::testing::statOf(store_, "ferry_upstream_unknown_outcome_total"), 1);
}

TEST_F(RouterFailureTest, ResetBeforeSendAnswers503) {
  fail(failure(UpstreamFailure::Kind::Reset, false));
  ASSERT_EQ(stream_.local_replies.size(), 1u);
  EXPECT_EQ(stream_.local_replies[0].status, 503);
  EXPECT_EQ(stream_.local_replies[0].extra.get("retry-after"), "1");
  EXPECT_EQ(ferry::testing::statOf(store_, "ferry_upstream_unknown_outcome_total"), 0);
}

// A request sent whole with no response head in time (the router's response_head timer):
// the local instance may have applied it, so 504 with its own code, not a 503 to retry.
TEST_F(RouterFailureTest, ResponseHeadTimeoutAnswers504UpstreamResponseTimeout) {
  config_.response_head_timeout = event::Millis(1);
  start(true);
  stream(8080).ready();
  runUntilFailure();
  ASSERT_EQ(stream_.local_replies.size(), 1u);
  EXPECT_EQ(stream_.local_replies[0].status, 504);
  EXPECT_EQ(stream_.local_replies[0].code, "upstream_response_timeout");
  EXPECT_FALSE(stream_.local_replies[0].extra.get("retry-after").has_value());
}

// A failure the stream dealt with (a filter answered it, a held response went out, or the
// response was cut) gets no second answer.
TEST_F(RouterFailureTest, AClaimedFailureIsNotAnsweredAgain) {
  stream_.claim_upstream_failures = true;
  fail(failure(UpstreamFailure::Kind::ConnectFailed, false));
  EXPECT_EQ(stream_.upstream_failures.size(), 1u);
  EXPECT_TRUE(stream_.local_replies.empty());
}

// The factory gives each router the pools of the worker its stream runs on (the slot's value in
// the context the stream hands it), never another worker's.
TEST(RouterFilterFactoryTest, EachRouterUsesItsOwnWorkersPools) {
  event::WorkerSlots slots;
  std::map<event::WorkerContext*, std::vector<uint16_t>> made;  // pools made, by worker
  auto upstreams = slots.allocate<upstream::WorkerUpstreams>([&made](event::WorkerContext& worker) {
    return std::make_unique<upstream::WorkerUpstreams>(
        [&made, &worker](const upstream::UpstreamTarget& t) {
          made[&worker].push_back(t.port);
          return std::make_unique<ScriptedPool>(t);
        });
  });
  stats::Store store;
  RouterConfig config;
  config.local = target("local", 8080);
  RouterFilterFactory factory(config, upstreams, store);
  event::Dispatcher d1, d2;
  event::WorkerContext one(d1, slots), two(d2, slots);
  for (event::WorkerContext* worker : {&one, &one, &two}) {
    testing::FakeFilterCallbacks stream(worker->dispatcher());
    stream.local = config.local;
    stream.request.method = "GET";
    stream.request.path = "/v1/streams";
    auto router = factory.createTerminalFilter(*worker);
    router->setCallbacks(stream);
    router->setTerminalCallbacks(stream);
    router->onRequestHeaders(stream.request, true);
    router->onDestroy();
  }
  EXPECT_EQ(made[&one], std::vector<uint16_t>{8080}) << "the second router reused its pool";
  EXPECT_EQ(made[&two], std::vector<uint16_t>{8080}) << "the other worker has its own";
  EXPECT_NE(&one.get(upstreams), &two.get(upstreams));
}

// A filter that claimed a failure asks for this policy (StreamFilterCallbacks::
// sendUpstreamFailureReply, through the stream): the same answers and counter as unclaimed.
TEST_F(RouterFailureTest, AFilterAskingForThePolicyGetsTheSameAnswer) {
  stream_.claim_upstream_failures = true;
  fail(failure(UpstreamFailure::Kind::Reset, true));
  ASSERT_TRUE(stream_.local_replies.empty());
  router_->sendUpstreamFailureReply(failure(UpstreamFailure::Kind::Reset, true));
  router_->sendUpstreamFailureReply(failure(UpstreamFailure::Kind::ResponseHeadTimeout, true));
  ASSERT_EQ(stream_.local_replies.size(), 2u);
  EXPECT_EQ(stream_.local_replies[0].status, 502);
  EXPECT_EQ(stream_.local_replies[0].code, "upstream_outcome_unknown");
  EXPECT_EQ(ferry::testing::statOf(store_, "ferry_upstream_unknown_outcome_total"), 1);
  EXPECT_EQ(stream_.local_replies[1].status, 504);
  EXPECT_EQ(stream_.local_replies[1].code, "upstream_response_timeout");
}

}  // namespace
}  // namespace ferry::filters
