// Tests filters/owner_forwarding/owner_forwarding_filter.cc against the contract in
// docs/forwarding.md: each trigger rule, the forward itself and each failure row, with the
// counters /stats shows. The stream is the recording fake
// (tests/support/http/fake_filter_callbacks.h); the peer table is real. Owner routing's resend
// to the local instance: a failure there gets the router's own answer
// (filters/router/upstream_failure_reply.h, which the fake applies as the router would).

#include "filters/owner_forwarding/owner_forwarding_filter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "filters/owner_forwarding/forward_log.h"
#include "filters/owner_forwarding/owner_routing.h"
#include "filters/owner_forwarding/stream_key.h"
#include "filters/router/router_stats.h"
#include "filters/router/upstream_failure_reply.h"
#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/peers/peer_table.h"
#include "proxy/peers/peer_table_provider.h"
#include "proxy/stats/stats.h"
#include "tests/support/http/fake_filter_callbacks.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::filters {
namespace {

using http::FilterStatus;
using ::testing::HasSubstr;
using Call = testing::FakeFilterCallbacks::Call;

peers::PeerTableSharedPtr table(std::map<std::string, peers::PeerOrigin> peers,
                                uint64_t version = 1) {
  return std::make_shared<const peers::PeerTable>(std::move(peers), version);
}

class OwnerForwardingFilterTest : public ::testing::Test {
 protected:
  OwnerForwardingFilterTest() : forwarding_stats_(store_, slots_) {
    provider_.publish(table({{"inst-a", {"http", "10.0.0.1", 8081, ""}},
                             {"inst-b", {"http", "10.0.0.2", 8082, ""}},
                             {"inst-l", {"http", "localhost", 9000, ""}}}));
    config_.instance_name = "inst-a";
    config_.routes = {"/v1/stream/", "/v1/streams/"};
    config_.peers = &provider_;
    config_.stats = &forwarding_stats_;
    callbacks_.forbid(Call::InternalRequest, "owner forwarding issues no internal request");
  }

  // Creates the filter and runs the request head through it.
  void request(const std::string& method, const std::string& path,
               std::vector<std::pair<std::string, std::string>> fields = {}) {
    filter_ = std::make_unique<OwnerForwardingFilter>(config_, worker());
    filter_->setCallbacks(callbacks_);
    callbacks_.reset();
    callbacks_.request.method = method;
    callbacks_.request.path = path;
    for (auto& [n, v] : fields) callbacks_.request.headers.add(n, v);
    EXPECT_EQ(filter_->onRequestHeaders(callbacks_.request, false), FilterStatus::Continue);
    Buffer body;
    body.add("{\"x\":1}");
    EXPECT_EQ(filter_->onRequestBody(body, true), FilterStatus::Continue);
  }
  http::ResponseHeaders response(int status, std::optional<std::string> replay_to) {
    http::ResponseHeaders h;
    h.status = status;
    h.headers.add("content-type", "application/json");
    if (replay_to) h.headers.add("streams-replay-to", *replay_to);
    return h;
  }
  // The local instance's answer, headers then body; returns the status of the last call.
  FilterStatus localAnswer(int status, std::optional<std::string> replay_to) {
    local_response_ = response(status, replay_to);
    FilterStatus s = filter_->onResponseHeaders(local_response_, false);
    if (s == FilterStatus::Continue) {
      Buffer body;
      body.add("{\"error\":{}}");
      return filter_->onResponseBody(body, true);
    }
    EXPECT_EQ(s, FilterStatus::StopAndBuffer);
    Buffer part;
    part.add("{\"error\":");
    EXPECT_EQ(filter_->onResponseBody(part, false), FilterStatus::StopAndBuffer);
    Buffer whole;
    whole.add("{\"error\":{}}");
    return filter_->onResponseBody(whole, true);
  }
  // Expects the 409 went to the client unchanged: no replay, no hold.
  void expectPassedThrough(FilterStatus last) {
    EXPECT_EQ(last, FilterStatus::Continue);
    EXPECT_TRUE(callbacks_.replays.empty());
    EXPECT_TRUE(callbacks_.local_replies.empty());
    EXPECT_FALSE(local_response_.headers.has("streams-forwarded-to"));
  }
  int64_t skipped(const std::string& reason) {
    return ferry::testing::statOf(store_, "ferry_forward_skipped_total", {{"reason", reason}});
  }
  int64_t skippedTotal() {
    int64_t n = 0;
    for (const char* r : {"not_data_plane", "invalid_header", "marked", "self", "unknown_owner",
                          "body_over_limit", "refused"}) {
      n += skipped(r);
    }
    return n;
  }
  int64_t ownerCounter(const std::string& name, const std::string& owner = "inst-b") {
    return ferry::testing::statOf(store_, name, {{"owner", owner}});
  }
  int64_t cancelled(const std::string& phase) {
    return ferry::testing::statOf(store_, "ferry_forward_cancelled_total", {{"phase", phase}});
  }
  // Runs a forward up to the point where the owner has been asked.
  void startForward() {
    request("POST", "/v1/stream/s1");
    ASSERT_EQ(localAnswer(409, "inst-b"), FilterStatus::StopAndWait);
    ASSERT_EQ(callbacks_.replays.size(), 1u);
  }

  // The worker the filters run on, made at first use: a test may allocate slots before that
  // (another provider).
  event::WorkerContext& worker() {
    if (!worker_) worker_ = std::make_unique<event::WorkerContext>(dispatcher_, slots_);
    return *worker_;
  }

  stats::Store store_;
  event::WorkerSlots slots_;
  event::Dispatcher dispatcher_;
  std::unique_ptr<event::WorkerContext> worker_;
  OwnerForwardingStats forwarding_stats_;
  peers::PeerTableProvider provider_{slots_};
  OwnerForwardingConfig config_;
  testing::FakeFilterCallbacks callbacks_;
  std::unique_ptr<OwnerForwardingFilter> filter_;
  http::ResponseHeaders local_response_;
};

// ---- The access log's fields (forward_log.h) ---------------------------------------------------

TEST(ForwardLogTest, TheLastOutcomeWinsAndOnlyASkipHasAReason) {
  access_log::StreamInfo info;
  recordForward(info, ForwardOutcome::Skipped, "inst-b", "unknown_owner");
  EXPECT_EQ(info.get("forward_reason"), "unknown_owner");
  recordForward(info, ForwardOutcome::Forwarded, "inst-c");
  EXPECT_EQ(info.get("forward"), "forwarded");
  EXPECT_EQ(info.get("owner"), "inst-c");
  EXPECT_FALSE(info.get("forward_reason").has_value());
  recordRoute(info, "right");
  EXPECT_EQ(info.get("route"), "right");
}

// ---- Rule 1: data-plane routes --------------------------------------------------------------

TEST_F(OwnerForwardingFilterTest, DataPlaneRoutesAreForwarded) {
  for (auto [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"POST", "/v1/stream/s1"},
           {"GET", "/v1/stream/s1?offset=-1&live=long-poll"},
           {"GET", "/v1/streams/s1/records"},
           {"DELETE", "/v1/stream/s1"}}) {
    EXPECT_TRUE(config_.isDataPlane(http::RequestHeaders{method, path, "", {}}))
        << method << " " << path;
  }
}

TEST_F(OwnerForwardingFilterTest, ControlRoutesAreNeverDataPlaneWhateverTheRouteList) {
  config_.routes = {"/"};  // even a route list that matches everything
  for (const char* path : {"/health", "/readyz", "/livez", "/operator", "/operator/drain",
                           "/operators", "/v1/debug/shards", "/v1/internal/ring"}) {
    EXPECT_FALSE(config_.isDataPlane(http::RequestHeaders{"POST", path, "", {}})) << path;
  }
  EXPECT_TRUE(config_.isDataPlane(http::RequestHeaders{"POST", "/v1/stream/s1", "", {}}));
}

TEST_F(OwnerForwardingFilterTest, OtherRoutesAndOptionsAreNotDataPlane) {
  for (auto [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"OPTIONS", "/v1/stream/s1"},
           {"GET", "/v1/stream/"},  // the prefix alone names no stream
           {"GET", "/v1/streamx/s1"},
           {"GET", "/v2/stream/s1"},
           {"GET", "/"}}) {
    EXPECT_FALSE(config_.isDataPlane(http::RequestHeaders{method, path, "", {}}))
        << method << " " << path;
  }
}

TEST_F(OwnerForwardingFilterTest, ConflictOnControlRouteStaysAndIsCounted) {
  config_.routes = {"/"};
  int n = 0;
  for (const char* path : {"/health", "/readyz", "/operator/x", "/v1/debug/x", "/v1/internal/x"}) {
    request("POST", path);
    expectPassedThrough(localAnswer(409, "inst-b"));
    EXPECT_EQ(skipped("not_data_plane"), ++n) << path;
  }
  request("OPTIONS", "/v1/stream/s1");
  expectPassedThrough(localAnswer(409, "inst-b"));
  EXPECT_EQ(skipped("not_data_plane"), n + 1);
  EXPECT_EQ(skippedTotal(), n + 1);
}

// ---- Rule 2: a 409 with a valid Streams-Replay-To -------------------------------------------

TEST_F(OwnerForwardingFilterTest, OtherStatusesPassWithoutACount) {
  for (int status : {200, 404, 408, 503}) {
    request("POST", "/v1/stream/s1");
    expectPassedThrough(localAnswer(status, "inst-b"));
  }
  EXPECT_EQ(skippedTotal(), 0);
}

TEST_F(OwnerForwardingFilterTest, ConflictWithoutHeaderPassesWithoutACount) {
  request("POST", "/v1/stream/s1");
  expectPassedThrough(localAnswer(409, std::nullopt));  // e.g. producer_seq_gap
  EXPECT_EQ(skippedTotal(), 0);
}

TEST_F(OwnerForwardingFilterTest, InvalidHeaderValueStaysAndIsCounted) {
  int n = 0;
  for (const char* bad : {"", "inst b", "http://10.9.9.9:80", "a/b", "inst-b,inst-c"}) {
    request("POST", "/v1/stream/s1");
    expectPassedThrough(localAnswer(409, std::string(bad)));
    EXPECT_EQ(skipped("invalid_header"), ++n) << bad;
  }
  EXPECT_EQ(skippedTotal(), n);
}

// ---- Rules 3 and 4 ---------------------------------------------------------------------------

TEST_F(OwnerForwardingFilterTest, MarkedRequestIsNeverForwardedAgain) {
  request("POST", "/v1/stream/s1", {{"Streams-Forwarded", "inst-c"}});
  expectPassedThrough(localAnswer(409, "inst-b"));
  EXPECT_EQ(skipped("marked"), 1);
  EXPECT_EQ(skippedTotal(), 1);
}

TEST_F(OwnerForwardingFilterTest, SelfAsOwnerStays) {
  request("POST", "/v1/stream/s1");
  expectPassedThrough(localAnswer(409, "inst-a"));
  EXPECT_EQ(skipped("self"), 1);
  EXPECT_EQ(skippedTotal(), 1);
}

// What the access log says comes from the stream's info map (forward_log.h): a skip names its
// owner and reason; a completed forward its owner, with no reason left over.
TEST_F(OwnerForwardingFilterTest, TheAccessLogFieldsGoToTheStreamInfo) {
  request("POST", "/v1/stream/s1");
  localAnswer(409, "inst-a");
  EXPECT_EQ(callbacks_.info.get("forward"), "skipped");
  EXPECT_EQ(callbacks_.info.get("forward_reason"), "self");
  EXPECT_EQ(callbacks_.info.get("owner"), "inst-a");
  EXPECT_FALSE(callbacks_.info.get("route").has_value());

  startForward();
  EXPECT_FALSE(callbacks_.info.get("forward").has_value()) << "nothing before the answer";
  http::ResponseHeaders owner = response(204, std::nullopt);
  filter_->onResponseHeaders(owner, true);
  EXPECT_EQ(callbacks_.info.get("forward"), "forwarded");
  EXPECT_EQ(callbacks_.info.get("owner"), "inst-b");
  EXPECT_FALSE(callbacks_.info.get("forward_reason").has_value());
}

TEST_F(OwnerForwardingFilterTest, UnknownOwnerStays) {
  request("POST", "/v1/stream/s1");
  expectPassedThrough(localAnswer(409, "inst-z"));
  EXPECT_EQ(skipped("unknown_owner"), 1);
  EXPECT_EQ(skippedTotal(), 1);
}

TEST_F(OwnerForwardingFilterTest, NoTableMeansUnknownOwner) {
  peers::PeerTableProvider empty(slots_);
  config_.peers = &empty;
  request("POST", "/v1/stream/s1");
  expectPassedThrough(localAnswer(409, "inst-b"));
  EXPECT_EQ(skipped("unknown_owner"), 1);
}

// ---- Rule 5: replayable ----------------------------------------------------------------------

TEST_F(OwnerForwardingFilterTest, NotReplayableAtTheHeadStays) {
  callbacks_.replayable = false;
  request("POST", "/v1/stream/s1");
  expectPassedThrough(localAnswer(409, "inst-b"));
  EXPECT_EQ(skipped("body_over_limit"), 1);
  EXPECT_EQ(skippedTotal(), 1);
}

TEST_F(OwnerForwardingFilterTest, OverLimitWhileThe409BodyArrivedStays) {
  request("POST", "/v1/stream/s1");
  local_response_ = response(409, "inst-b");
  ASSERT_EQ(filter_->onResponseHeaders(local_response_, false), FilterStatus::StopAndBuffer);
  callbacks_.replayable = false;  // the client kept uploading past the limit
  Buffer body;
  body.add("{}");
  EXPECT_EQ(filter_->onResponseBody(body, true), FilterStatus::Continue);
  EXPECT_TRUE(callbacks_.replays.empty());
  EXPECT_EQ(skipped("body_over_limit"), 1);
  EXPECT_EQ(ownerCounter("ferry_forward_attempts_total"), 0);
}

TEST_F(OwnerForwardingFilterTest, ReplayRefusedByTheStreamStays) {
  callbacks_.replay_accepted = false;
  request("POST", "/v1/stream/s1");
  EXPECT_EQ(localAnswer(409, "inst-b"), FilterStatus::Continue);
  EXPECT_EQ(callbacks_.replays.size(), 1u);
  EXPECT_EQ(skipped("body_over_limit"), 1);
  EXPECT_FALSE(filter_->onUpstreamFailure({})) << "no forward in flight";
}

// ---- The forward -----------------------------------------------------------------------------

TEST_F(OwnerForwardingFilterTest, ForwardsOnceToTheTableUrlMarked) {
  request("POST", "/v1/stream/s1");
  local_response_ = response(409, "inst-b");
  // The local 409 is held whole until its end.
  EXPECT_EQ(filter_->onResponseHeaders(local_response_, false), FilterStatus::StopAndBuffer);
  Buffer part;
  part.add("{\"error\":");
  EXPECT_EQ(filter_->onResponseBody(part, false), FilterStatus::StopAndBuffer);
  EXPECT_TRUE(callbacks_.replays.empty()) << "no forward before the 409 ended";
  Buffer all;
  all.add("{\"error\":{}}");
  EXPECT_EQ(filter_->onResponseBody(all, true), FilterStatus::StopAndWait);

  ASSERT_EQ(callbacks_.replays.size(), 1u);
  const auto& r = callbacks_.replays[0];
  EXPECT_EQ(r.target.name, "inst-b");
  EXPECT_EQ(r.target.scheme, "http");
  EXPECT_EQ(r.target.host, "10.0.0.2");
  EXPECT_EQ(r.target.port, 8082);
  ASSERT_EQ(r.extra_headers.size(), 1u);
  EXPECT_EQ(r.extra_headers.get("streams-forwarded"), "inst-a");
  // Checked fields (a token name, the configured instance name): the router keeps a parsed
  // head's wire-safe mark when it adds them (no per-field checks in the HTTP/1 encoder).
  EXPECT_TRUE(r.extra_headers.wireSafe());
  EXPECT_EQ(ownerCounter("ferry_forward_attempts_total"), 1);
  EXPECT_EQ(skippedTotal(), 0);
  EXPECT_EQ(callbacks_.continue_responses, 0);
  EXPECT_TRUE(callbacks_.local_replies.empty());
}

TEST_F(OwnerForwardingFilterTest, TargetComesFromTheLatestTableNotTheHeader) {
  provider_.publish(table({{"inst-b", {"http", "10.7.7.7", 7000, ""}}}, 2));
  request("POST", "/v1/stream/s1");
  ASSERT_EQ(localAnswer(409, "inst-b"), FilterStatus::StopAndWait);
  ASSERT_EQ(callbacks_.replays.size(), 1u);
  EXPECT_EQ(callbacks_.replays[0].target.host, "10.7.7.7");
  EXPECT_EQ(callbacks_.replays[0].target.port, 7000);
}

TEST_F(OwnerForwardingFilterTest, LocalhostPeerBecomesLoopbackAddress) {
  request("POST", "/v1/stream/s1");
  ASSERT_EQ(localAnswer(409, "inst-l"), FilterStatus::StopAndWait);
  EXPECT_EQ(callbacks_.replays.at(0).target.host, "127.0.0.1");
  EXPECT_EQ(callbacks_.replays.at(0).target.port, 9000);
}

TEST_F(OwnerForwardingFilterTest, OwnerAnswerGetsForwardedToAndCompletes) {
  startForward();
  http::ResponseHeaders owner = response(201, std::nullopt);
  EXPECT_EQ(filter_->onResponseHeaders(owner, false), FilterStatus::Continue);
  EXPECT_EQ(owner.headers.get("streams-forwarded-to"), "inst-b");
  EXPECT_EQ(owner.status, 201);
  Buffer chunk;
  chunk.add("part");
  EXPECT_EQ(filter_->onResponseBody(chunk, false), FilterStatus::Continue) << "streamed";
  EXPECT_EQ(chunk.toString(), "part") << "the body passes unchanged";
  EXPECT_EQ(ownerCounter("ferry_forward_completed_total"), 0);
  Buffer last;
  EXPECT_EQ(filter_->onResponseBody(last, true), FilterStatus::Continue);
  EXPECT_EQ(ownerCounter("ferry_forward_completed_total"), 1);
  EXPECT_EQ(store_.histogram("ferry_forward_latency_seconds", "", {{"owner", "inst-b"}}).count(),
            1u);
  filter_->onDestroy();
  EXPECT_EQ(cancelled("before_response") + cancelled("during_response"), 0);
}

// Streams-Forwarded-To names a peer table entry (a checked token): an answer head fit for HTTP/1
// as it came (wire-safe) stays so; one that was not stays unmarked.
TEST_F(OwnerForwardingFilterTest, ForwardedToKeepsTheAnswersWireSafeMarkAsItWas) {
  startForward();
  http::ResponseHeaders parsed = response(201, std::nullopt);
  parsed.headers.markWireSafe();
  EXPECT_EQ(filter_->onResponseHeaders(parsed, true), FilterStatus::Continue);
  EXPECT_EQ(parsed.headers.get("streams-forwarded-to"), "inst-b");
  EXPECT_TRUE(parsed.headers.wireSafe());

  startForward();
  http::ResponseHeaders built = response(201, std::nullopt);
  EXPECT_EQ(filter_->onResponseHeaders(built, true), FilterStatus::Continue);
  EXPECT_EQ(built.headers.get("streams-forwarded-to"), "inst-b");
  EXPECT_FALSE(built.headers.wireSafe());
}

TEST_F(OwnerForwardingFilterTest, OwnerHeadersOnlyAnswerCompletes) {
  startForward();
  http::ResponseHeaders owner = response(204, std::nullopt);
  EXPECT_EQ(filter_->onResponseHeaders(owner, true), FilterStatus::Continue);
  EXPECT_EQ(owner.headers.get("streams-forwarded-to"), "inst-b");
  EXPECT_EQ(ownerCounter("ferry_forward_completed_total"), 1);
}

TEST_F(OwnerForwardingFilterTest, OwnersOwn409IsNotForwardedAgain) {
  startForward();
  http::ResponseHeaders owner = response(409, "inst-c");
  EXPECT_EQ(filter_->onResponseHeaders(owner, false), FilterStatus::Continue);
  Buffer body;
  EXPECT_EQ(filter_->onResponseBody(body, true), FilterStatus::Continue);
  EXPECT_EQ(callbacks_.replays.size(), 1u) << "one hop only";
  EXPECT_EQ(owner.headers.get("streams-forwarded-to"), "inst-b");
}

// ---- Failures --------------------------------------------------------------------------------

upstream::UpstreamFailure failure(bool sent, bool started) {
  upstream::UpstreamFailure f;
  f.kind = sent ? upstream::UpstreamFailure::Kind::Reset
                : upstream::UpstreamFailure::Kind::ConnectFailed;
  f.request_bytes_sent = sent;
  f.response_started = started;
  return f;
}

TEST_F(OwnerForwardingFilterTest, FailureBeforeSendReleasesTheLocal409) {
  startForward();
  EXPECT_TRUE(filter_->onUpstreamFailure(failure(false, false)));
  EXPECT_EQ(callbacks_.continue_responses, 1);
  EXPECT_TRUE(callbacks_.local_replies.empty());
  EXPECT_EQ(ownerCounter("ferry_forward_refused_total"), 1);
  EXPECT_EQ(skipped("refused"), 1);
  EXPECT_EQ(ownerCounter("ferry_forward_failed_total"), 0);
  filter_->onDestroy();
  EXPECT_EQ(cancelled("before_response") + cancelled("during_response"), 0);
}

TEST_F(OwnerForwardingFilterTest, FailureAfterSendAnswers503ForwardFailed) {
  startForward();
  EXPECT_TRUE(filter_->onUpstreamFailure(failure(true, false)));
  ASSERT_EQ(callbacks_.local_replies.size(), 1u);
  const auto& reply = callbacks_.local_replies[0];
  EXPECT_EQ(reply.status, 503);
  EXPECT_EQ(reply.code, "forward_failed");
  EXPECT_THAT(reply.message, HasSubstr("inst-b"));
  EXPECT_EQ(reply.extra.get("retry-after"), "1");
  EXPECT_EQ(callbacks_.continue_responses, 0) << "the 409 must not go out: it may be applied";
  EXPECT_EQ(ownerCounter("ferry_forward_failed_total"), 1);
  EXPECT_EQ(ownerCounter("ferry_forward_refused_total"), 0);
  EXPECT_EQ(skipped("refused"), 0);
}

TEST_F(OwnerForwardingFilterTest, FailureAfterResponseStartedIsCountedAsCut) {
  startForward();
  http::ResponseHeaders owner = response(200, std::nullopt);
  filter_->onResponseHeaders(owner, false);
  EXPECT_FALSE(filter_->onUpstreamFailure(failure(true, true))) << "the stream cuts";
  EXPECT_EQ(ownerCounter("ferry_forward_cut_total"), 1);
  EXPECT_TRUE(callbacks_.local_replies.empty());
  EXPECT_EQ(callbacks_.continue_responses, 0);
  EXPECT_EQ(ownerCounter("ferry_forward_completed_total"), 0);
}

TEST_F(OwnerForwardingFilterTest, FailureWhenNotForwardingIsNotClaimed) {
  request("POST", "/v1/stream/s1");
  EXPECT_FALSE(filter_->onUpstreamFailure(failure(false, false)));
  EXPECT_EQ(callbacks_.continue_responses, 0);
  EXPECT_EQ(skippedTotal(), 0);
}

TEST_F(OwnerForwardingFilterTest, ClientGoneWhileForwardingCountsCancelled) {
  startForward();
  filter_->onDestroy();
  EXPECT_EQ(cancelled("before_response"), 1);
  EXPECT_EQ(cancelled("during_response"), 0);
  filter_->onDestroy();  // idempotent
  EXPECT_EQ(cancelled("before_response"), 1);
}

TEST_F(OwnerForwardingFilterTest, ClientGoneWhileTheOwnersAnswerStreamsCountsCancelledDuringIt) {
  // A forwarded live feed ends this way: the client closes it.
  startForward();
  http::ResponseHeaders owner = response(200, std::nullopt);
  filter_->onResponseHeaders(owner, false);
  filter_->onDestroy();
  EXPECT_EQ(cancelled("during_response"), 1);
  EXPECT_EQ(cancelled("before_response"), 0);
  EXPECT_EQ(ownerCounter("ferry_forward_completed_total"), 0);
}

TEST_F(OwnerForwardingFilterTest, DestroyWithoutForwardIsNotCancelled) {
  request("POST", "/v1/stream/s1");
  filter_->onDestroy();
  EXPECT_EQ(cancelled("before_response") + cancelled("during_response"), 0);
}

TEST_F(OwnerForwardingFilterTest, FactoryMakesIndependentFilters) {
  OwnerForwardingFilterFactory factory(config_);
  auto a = factory.createFilter(worker());
  auto b = factory.createFilter(worker());
  EXPECT_NE(a.get(), b.get());
  testing::FakeFilterCallbacks cb_a, cb_b;
  a->setCallbacks(cb_a);
  b->setCallbacks(cb_b);
  http::RequestHeaders marked{"POST", "/v1/stream/s1", "", {}};
  marked.headers.add("streams-forwarded", "inst-c");
  http::RequestHeaders plain{"POST", "/v1/stream/s1", "", {}};
  a->onRequestHeaders(marked, true);
  b->onRequestHeaders(plain, true);
  auto ha = response(409, "inst-b");
  auto hb = response(409, "inst-b");
  EXPECT_EQ(a->onResponseHeaders(ha, false), FilterStatus::Continue);
  EXPECT_EQ(b->onResponseHeaders(hb, false), FilterStatus::StopAndBuffer);
}

// Regression: forOwner() cached per-owner counters by the stats object's address, so a new
// OwnerForwardingStats built where a destroyed one lived (a server restarted in one process)
// counted into the old store. The cache now lives in the worker's context.
// ---- Owner routing: the resend to the local instance ------------------------------------------

// A request for s1 goes first to its learned owner inst-b, which answers 409 naming this
// instance: the entry is dropped and the request is sent once more, to the local instance.
// The fake stream answers sendUpstreamFailureReply() with the router's policy.
class OwnerRoutingResendTest : public OwnerForwardingFilterTest {
 protected:
  OwnerRoutingResendTest()
      : router_stats_(store_), routing_(OwnerRoutingSettings{}, store_, slots_) {
    config_.routing = &routing_;
    callbacks_.failure_policy = [this](const upstream::UpstreamFailure& f) {
      answerUpstreamFailure(callbacks_, f, router_stats_);
    };
  }
  void routeThenResendToLocal() {
    routing_.table(worker()).learn(*streamKey("/v1/stream/s1"), "inst-b",
                                   std::chrono::steady_clock::now());
    request("POST", "/v1/stream/s1");
    ASSERT_EQ(callbacks_.replays.size(), 1u);
    ASSERT_EQ(callbacks_.replays[0].target.name, "inst-b") << "routed: the first attempt";
    ASSERT_EQ(localAnswer(409, "inst-a"), FilterStatus::StopAndWait) << "the wrong owner's 409";
    ASSERT_EQ(callbacks_.replays.size(), 2u);
    ASSERT_EQ(callbacks_.replays[1].target.name, "local");
    ASSERT_EQ(callbacks_.replays[1].extra_headers.size(), 0u) << "the local path is not marked";
  }
  static upstream::UpstreamFailure afterAByte(upstream::UpstreamFailure::Kind kind) {
    upstream::UpstreamFailure f;
    f.kind = kind;
    f.request_bytes_sent = true;
    f.detail = "no head in 15000 ms";
    return f;
  }

  RouterStats router_stats_;
  OwnerRouting routing_;
};

TEST_F(OwnerRoutingResendTest, LocalHeadTimeoutAfterAByteGetsTheRouters504) {
  routeThenResendToLocal();
  EXPECT_TRUE(
      filter_->onUpstreamFailure(afterAByte(upstream::UpstreamFailure::Kind::ResponseHeadTimeout)));
  ASSERT_EQ(callbacks_.failure_replies.size(), 1u) << "the router's policy, not a copy";
  ASSERT_EQ(callbacks_.local_replies.size(), 1u);
  EXPECT_EQ(callbacks_.local_replies[0].status, 504);
  EXPECT_EQ(callbacks_.local_replies[0].code, "upstream_response_timeout");
  EXPECT_FALSE(callbacks_.local_replies[0].extra.has("retry-after"));
  EXPECT_EQ(callbacks_.continue_responses, 0) << "the held 409 would invite a replay";
}

TEST_F(OwnerRoutingResendTest, LocalResetAfterAByteGetsTheRouters502AndItsCount) {
  routeThenResendToLocal();
  EXPECT_TRUE(filter_->onUpstreamFailure(afterAByte(upstream::UpstreamFailure::Kind::Reset)));
  ASSERT_EQ(callbacks_.failure_replies.size(), 1u);
  ASSERT_EQ(callbacks_.local_replies.size(), 1u);
  EXPECT_EQ(callbacks_.local_replies[0].status, 502);
  EXPECT_EQ(callbacks_.local_replies[0].code, "upstream_outcome_unknown");
  EXPECT_FALSE(callbacks_.local_replies[0].extra.has("retry-after"));
  EXPECT_EQ(ferry::testing::statOf(store_, "ferry_upstream_unknown_outcome_total"), 1);
  EXPECT_EQ(callbacks_.continue_responses, 0);
}

TEST_F(OwnerRoutingResendTest, LocalSawNothingReleasesTheWrongOwners409) {
  routeThenResendToLocal();
  EXPECT_TRUE(filter_->onUpstreamFailure(failure(false, false)));
  EXPECT_EQ(callbacks_.continue_responses, 1);
  EXPECT_TRUE(callbacks_.failure_replies.empty());
  EXPECT_TRUE(callbacks_.local_replies.empty());
}

TEST(OwnerForwardingStatsTest, NewStatsAtAReusedAddressUseTheirOwnStore) {
  stats::Store first, second;
  event::Dispatcher dispatcher;
  std::optional<event::WorkerSlots> slots;
  std::optional<OwnerForwardingStats> slot;
  for (stats::Store* store : {&first, &second}) {
    slots.emplace();
    slot.emplace(*store, *slots);  // same storage, same address
    event::WorkerContext worker(dispatcher, *slots);
    slot->forOwner(worker, "inst-b").attempted->inc();
    slot.reset();
  }
  EXPECT_EQ(ferry::testing::statOf(first, "ferry_forward_attempts_total", {{"owner", "inst-b"}}),
            1);
  EXPECT_EQ(ferry::testing::statOf(second, "ferry_forward_attempts_total", {{"owner", "inst-b"}}),
            1);
}

TEST(OwnerForwardingStatsTest, SkipReasonsHaveDistinctSeries) {
  stats::Store store;
  event::WorkerSlots slots;
  OwnerForwardingStats s(store, slots);
  s.skipped(SkipReason::Self);
  s.skipped(SkipReason::Self);
  s.skipped(SkipReason::Refused);
  EXPECT_EQ(ferry::testing::statOf(store, "ferry_forward_skipped_total", {{"reason", "self"}}), 2);
  EXPECT_EQ(ferry::testing::statOf(store, "ferry_forward_skipped_total", {{"reason", "refused"}}),
            1);
  EXPECT_EQ(ferry::testing::statOf(store, "ferry_forward_skipped_total", {{"reason", "marked"}}),
            0);
}

// Each worker caches its own entries (no lock between workers), over the same series.
TEST(OwnerForwardingStatsTest, EachWorkerCachesItsOwnEntriesOfTheSameSeries) {
  stats::Store store;
  event::WorkerSlots slots;
  OwnerForwardingStats s(store, slots);
  event::Dispatcher d1, d2;
  event::WorkerContext one(d1, slots), two(d2, slots);
  OwnerStats& mine = s.forOwner(one, "x");
  EXPECT_EQ(&s.forOwner(one, "x"), &mine) << "found again in the worker's cache";
  EXPECT_NE(&s.forOwner(two, "x"), &mine) << "the other worker has its own entry";
  EXPECT_EQ(s.forOwner(two, "x").attempted, mine.attempted);
  mine.attempted->inc();
  s.forOwner(two, "x").attempted->inc();
  EXPECT_EQ(ferry::testing::statOf(store, "ferry_forward_attempts_total", {{"owner", "x"}}), 2);
}

}  // namespace
}  // namespace ferry::filters
