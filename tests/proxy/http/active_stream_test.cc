// Tests proxy/http/active_stream.cc: what the stream adds around its filter chain: the
// connection's share, replays (the replay buffer, a replay's response replacing a held one),
// upstream failures the filters claim or not, local replies, timers, client resets and
// watermarks. The terminal filter is a fake: no sockets, the test plays the upstream. What an
// unclaimed failure becomes for the client is the router's (tests/filters/router/).

#include "proxy/http/active_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/proxy/http/stream_fixture.h"

namespace ferry::http {
namespace {

using ::testing::ElementsAre;

class ActiveStreamTest : public testing::StreamFixture {};

// The stream hands its worker's context to every factory: that is how a filter (and the router)
// finds its per-worker state (event/worker_context.h).
TEST_F(ActiveStreamTest, FiltersAndTheTerminalAreMadeForTheStreamsWorker) {
  start(2);
  EXPECT_THAT(factories_[0]->workers, ElementsAre(&worker_));
  EXPECT_THAT(factories_[1]->workers, ElementsAre(&worker_));
  EXPECT_EQ(terminal_factory_->last_worker, &worker_);
}

TEST_F(ActiveStreamTest, AStreamOverItsConnectionsShareWaitsThenRunsInOrder) {
  start(2);
  owner_.hold_new_streams = true;
  sendRequestHeaders(false);
  sendRequestData("ab", false);
  sendRequestData("cd", true);
  // Nothing ran: not the filters, not the router; the body is not read meanwhile.
  EXPECT_TRUE(log_.empty()) << log_.front();
  EXPECT_THAT(encoder_.pauses, ElementsAre(true));
  stream_->onConnectionShareGranted();
  EXPECT_THAT(encoder_.pauses, ElementsAre(true, false));
  EXPECT_THAT(log_,
              ElementsAre("f0:reqh /v1/stream/s1", "f1:reqh /v1/stream/s1", "T:reqh /v1/stream/s1",
                          "f0:reqb abcd end", "f1:reqb abcd end", "T:reqb abcd end"));
  EXPECT_TRUE(terminal_->request_ended);
}

// ---- Replay ---------------------------------------------------------------------------------

TEST_F(ActiveStreamTest, ReplayHandsTheTerminalACopyOfTheBodySentSoFar) {
  start(1);
  sendRequestHeaders(false);
  sendRequestData("hello ", false);
  sendRequestData("world", true);
  ASSERT_EQ(terminal_->body, "hello world");  // the terminal consumed (drained) every byte
  EXPECT_EQ(stat("ferry_replay_held_bytes"), 11);

  HeaderMap mark;
  mark.add("streams-forwarded", "a");
  holdConflict(0, [&](Buffer&) {
    EXPECT_TRUE(filter(0).callbacks().requestReplayable());
    EXPECT_TRUE(filter(0).callbacks().replay({owner_target_, mark}));
    return FilterStatus::StopAndWait;
  });
  sendConflict();
  ASSERT_EQ(terminal_->replays.size(), 1u);
  const auto& r = terminal_->replays[0];
  EXPECT_EQ(r.body, "hello world");
  EXPECT_EQ(r.target.name, "b");
  EXPECT_EQ(r.target.host, "10.0.0.2");
  EXPECT_EQ(r.target.port, 8081);
  EXPECT_EQ(r.extra_headers.get("streams-forwarded"), "a");
  EXPECT_EQ(stat("ferry_replays_total"), 1);
  // A copy: the terminal drained what it was handed, the stream still holds the bytes.
  Buffer again;
  EXPECT_TRUE(terminal_->callbacks().copyReplayBody(again));
  EXPECT_EQ(again.toString(), "hello world");
  EXPECT_EQ(encoder_.header_calls, 0) << "the 409 stays held";
}

TEST_F(ActiveStreamTest, ReplayMidUploadSendsKeptBytesThenTheRestOnce) {
  start(1);
  sendRequestHeaders(false);
  sendRequestData("part1-", false);
  // The 409 arrives while the client still uploads.
  holdConflict(0, [&](Buffer&) {
    EXPECT_TRUE(filter(0).callbacks().replay({owner_target_, {}}));
    return FilterStatus::StopAndWait;
  });
  sendConflict();
  ASSERT_EQ(terminal_->replays.size(), 1u);
  EXPECT_EQ(terminal_->replays[0].body, "part1-");
  EXPECT_FALSE(terminal_->request_ended);

  sendRequestData("part2-", false);
  sendRequestData("part3", true);
  EXPECT_EQ(terminal_->body_after_replay, "part2-part3") << "the rest goes on, no byte twice";
  EXPECT_TRUE(terminal_->request_ended);
  EXPECT_EQ(terminal_->replays[0].body + terminal_->body_after_replay, "part1-part2-part3");
}

TEST_F(ActiveStreamTest, ReplayBodyHoldsOnlyBytesThatReachedTheTerminal) {
  start(2);
  // f0 stops the request on its second chunk: those bytes have not reached the terminal, so a
  // replay must not include them; they follow after the replay when f0 continues.
  int chunks = 0;
  filter(0).on_request_body = [&chunks](Buffer&, bool) {
    return ++chunks == 2 ? FilterStatus::StopAndWait : FilterStatus::Continue;
  };
  sendRequestHeaders(false);
  sendRequestData("sent|", false);
  sendRequestData("held", true);
  EXPECT_EQ(terminal_->body, "sent|");
  holdConflict(1, [&](Buffer&) {
    EXPECT_TRUE(filter(1).callbacks().replay({owner_target_, {}}));
    return FilterStatus::StopAndWait;
  });
  sendConflict();
  ASSERT_EQ(terminal_->replays.size(), 1u);
  EXPECT_EQ(terminal_->replays[0].body, "sent|");
  filter(0).callbacks().continueRequest();
  EXPECT_EQ(terminal_->body_after_replay, "held");
  EXPECT_TRUE(terminal_->request_ended);
}

TEST_F(ActiveStreamTest, BodyAtTheLimitStaysReplayable) {
  start(1, /*replay_limit=*/8);
  sendRequestHeaders(false);
  sendRequestData("1234", false);
  sendRequestData("5678", true);
  EXPECT_TRUE(stream_->requestReplayable());
  Buffer copy;
  EXPECT_TRUE(stream_->copyReplayBody(copy));
  EXPECT_EQ(copy.toString(), "12345678");
}

TEST_F(ActiveStreamTest, BodyOverTheLimitIsNotReplayable) {
  start(1, /*replay_limit=*/8);
  sendRequestHeaders(false);
  sendRequestData("12345", false);
  EXPECT_TRUE(stream_->requestReplayable());
  EXPECT_EQ(stat("ferry_replay_held_bytes"), 5);
  sendRequestData("6789", true);
  EXPECT_EQ(terminal_->body, "123456789") << "the request itself still goes through";
  EXPECT_FALSE(filter(0).callbacks().requestReplayable());
  EXPECT_EQ(stat("ferry_replay_buffer_overflows_total"), 1);
  EXPECT_EQ(stat("ferry_replay_held_bytes"), 0) << "the kept copy is dropped";
  Buffer copy;
  EXPECT_FALSE(stream_->copyReplayBody(copy));
  EXPECT_TRUE(copy.empty());

  holdConflict(0, [&](Buffer&) {
    EXPECT_FALSE(filter(0).callbacks().replay({owner_target_, {}}));
    return FilterStatus::Continue;
  });
  sendConflict();
  EXPECT_TRUE(terminal_->replays.empty());
  EXPECT_EQ(stat("ferry_replays_total"), 0);
  // The filter let the 409 go: it reaches the client whole.
  EXPECT_EQ(encoder_.headers->status, 409);
  EXPECT_EQ(encoder_.body, "{\"error\":\"409\"}");
}

TEST_F(ActiveStreamTest, ReplayedResponseReplacesTheHeldOne) {
  start(2);
  sendRequestHeaders(false);
  sendRequestData("body", true);
  std::vector<int> f0_statuses;
  filter(0).on_response_headers = [&f0_statuses](ResponseHeaders& h, bool) {
    f0_statuses.push_back(h.status);
    return FilterStatus::Continue;
  };
  holdConflict(1, [&](Buffer&) {
    EXPECT_TRUE(filter(1).callbacks().replay({owner_target_, {}}));
    return FilterStatus::StopAndWait;
  });
  sendConflict();
  // An informational response of the new attempt is not sent (the client had its own).
  terminal_->callbacks().onUpstreamInformational(
      std::make_unique<ResponseHeaders>(ResponseHeaders{100, "", {}}));
  EXPECT_TRUE(encoder_.informational.empty());

  terminal_->respond(200, {{"from", "owner"}}, false);
  terminal_->respondData("owner-", false);
  terminal_->respondData("answer", true);
  ASSERT_EQ(encoder_.header_calls, 1);
  EXPECT_EQ(encoder_.headers->status, 200);
  EXPECT_EQ(encoder_.headers->headers.get("from"), "owner");
  EXPECT_EQ(encoder_.body, "owner-answer") << "nothing of the held 409 body";
  EXPECT_THAT(f0_statuses, ElementsAre(200)) << "the held 409 never passed f0";
  EXPECT_EQ(owner_.completions, 1);
  EXPECT_FALSE(owner_.last_cut);
}

TEST_F(ActiveStreamTest, NoReplayOnceTheResponseStarted) {
  start(1);
  sendRequestHeaders(true);
  terminal_->respond(200, {}, false);
  EXPECT_FALSE(filter(0).callbacks().replay({owner_target_, {}}));
  EXPECT_TRUE(terminal_->replays.empty());
}

// ---- Upstream failures ----------------------------------------------------------------------

UpstreamFailure failure(UpstreamFailure::Kind kind, bool sent, std::string detail = "boom") {
  UpstreamFailure f;
  f.kind = kind;
  f.request_bytes_sent = sent;
  f.detail = std::move(detail);
  return f;
}

TEST_F(ActiveStreamTest, FilterThatClaimsAFailureAnswersIt) {
  start(2);
  filter(1).on_failure = [this](const UpstreamFailure&) {
    HeaderMap extra;
    extra.add("x-claimed", "yes");
    filter(1).callbacks().sendLocalReply(418, "claimed", "by f1", extra);
    return true;
  };
  sendRequestHeaders(true);
  terminal_->callbacks().onUpstreamFailure(failure(UpstreamFailure::Kind::ConnectFailed, false));
  ASSERT_EQ(encoder_.header_calls, 1);
  EXPECT_EQ(encoder_.headers->status, 418);
  EXPECT_EQ(encoder_.headers->headers.get("x-claimed"), "yes");
  EXPECT_EQ(encoder_.body, R"({"error":{"code":"claimed","message":"by f1"}})");
  EXPECT_TRUE(filter(0).failures.empty()) << "the first claim ends the search";
  EXPECT_EQ(owner_.completions, 1);
}

// timeouts.response has its own handler and counter: it is not an idle stream.
TEST_F(ActiveStreamTest, WholeResponseTimeoutIsNotCountedAsStreamIdle) {
  config_.response_timeout = event::Millis(1);
  start(1);
  sendRequestHeaders(true);
  owner_.on_complete = [this] { dispatcher_.exit(); };
  dispatcher_.run();  // until the timer answers
  EXPECT_EQ(encoder_.headers->status, 504);
  EXPECT_THAT(encoder_.body, ::testing::HasSubstr("\"code\":\"response_timeout\""));
  EXPECT_EQ(stat("ferry_response_timeouts_total"), 1);
  EXPECT_EQ(stat("ferry_stream_idle_timeouts_total"), 0);
}

// timeouts.request_body_idle counts only time ferry reads the body: while the upstream side has
// paused it (backpressure) the client is not stalling, so no 408 until reading resumes.
TEST_F(ActiveStreamTest, BodyIdleTimeoutDoesNotRunWhileFerryPausedTheBody) {
  config_.request_body_idle = event::Millis(20);
  start(1);
  sendRequestHeaders(false);
  stream_->pauseRequestBody(true);
  bool resumed = false;
  bool completed_while_paused = false;
  auto resume = dispatcher_.createTimer([&] {
    resumed = true;
    stream_->pauseRequestBody(false);
  });
  resume->enable(event::Millis(150));  // several body timeouts long
  owner_.on_complete = [&] {
    completed_while_paused = !resumed;
    dispatcher_.exit();
  };
  dispatcher_.run();  // until the 408 ends the stream
  EXPECT_FALSE(completed_while_paused) << "408 while ferry itself was not reading the body";
  ASSERT_TRUE(encoder_.headers.has_value());
  EXPECT_EQ(encoder_.headers->status, 408);
  EXPECT_EQ(stat("ferry_request_body_timeouts_total"), 1);
}

TEST_F(ActiveStreamTest, FailureAfterResponseStartedCutsTheResponse) {
  start(1);
  filter(0).on_failure = [](const UpstreamFailure&) { return true; };  // cannot stop a cut
  sendRequestHeaders(true);
  terminal_->respond(200, {}, false);
  terminal_->respondData("partial", false);
  terminal_->callbacks().onUpstreamFailure(failure(UpstreamFailure::Kind::Reset, true));
  EXPECT_EQ(owner_.completions, 1);
  EXPECT_TRUE(owner_.last_cut);
  EXPECT_FALSE(encoder_.ended) << "no clean end on a cut response";
  EXPECT_EQ(encoder_.header_calls, 1) << "no second head";
  EXPECT_EQ(encoder_.body, "partial");
  ASSERT_EQ(filter(0).failures.size(), 1u);
  EXPECT_TRUE(filter(0).failures[0].response_started) << "filters learn it was cut";
  EXPECT_EQ(stat("ferry_responses_cut_total"), 1);
  EXPECT_EQ(filter(0).destroyed, 1);
}

TEST_F(ActiveStreamTest, FailedReplayNobodyClaimsReleasesHeldResponse) {
  start(1);
  sendRequestHeaders(false);
  sendRequestData("b", true);
  holdConflict(0, [&](Buffer&) {
    EXPECT_TRUE(filter(0).callbacks().replay({owner_target_, {}}));
    return FilterStatus::StopAndWait;
  });
  sendConflict();
  terminal_->callbacks().onUpstreamFailure(failure(UpstreamFailure::Kind::ConnectFailed, false));
  ASSERT_TRUE(encoder_.headers.has_value());
  EXPECT_EQ(encoder_.headers->status, 409);
  EXPECT_EQ(encoder_.headers->headers.get("streams-replay-to"), "b");
  EXPECT_EQ(encoder_.body, "{\"error\":\"409\"}");
  EXPECT_EQ(owner_.completions, 1);
}

TEST_F(ActiveStreamTest, FailedReplayClaimedWithContinueResponseReleasesHeld409) {
  start(1);
  sendRequestHeaders(false);
  sendRequestData("b", true);
  holdConflict(0, [&](Buffer&) {
    EXPECT_TRUE(filter(0).callbacks().replay({owner_target_, {}}));
    return FilterStatus::StopAndWait;
  });
  filter(0).on_failure = [this](const UpstreamFailure&) {
    filter(0).callbacks().continueResponse();
    return true;
  };
  sendConflict();
  terminal_->callbacks().onUpstreamFailure(failure(UpstreamFailure::Kind::ConnectFailed, false));
  EXPECT_EQ(encoder_.header_calls, 1);
  EXPECT_EQ(encoder_.headers->status, 409);
  EXPECT_EQ(encoder_.body, "{\"error\":\"409\"}");
  EXPECT_TRUE(encoder_.ended);
}

// A filter that claims a failed replay but wants the client to get the terminal's answer (not
// the response it holds) asks for it: one policy, the terminal's (the router's 502/503/504).
TEST_F(ActiveStreamTest, ClaimedFailureAnsweredWithTheTerminalsFailurePolicy) {
  start(1);
  sendRequestHeaders(false);
  sendRequestData("b", true);
  holdConflict(0, [&](Buffer&) {
    EXPECT_TRUE(filter(0).callbacks().replay({owner_target_, {}}));
    return FilterStatus::StopAndWait;
  });
  filter(0).on_failure = [this](const UpstreamFailure& f) {
    filter(0).callbacks().sendUpstreamFailureReply(f);
    return true;
  };
  sendConflict();
  terminal_->callbacks().onUpstreamFailure(failure(UpstreamFailure::Kind::Reset, true));
  ASSERT_EQ(terminal_->failure_replies.size(), 1u);
  EXPECT_EQ(terminal_->failure_replies[0].kind, UpstreamFailure::Kind::Reset);
  EXPECT_TRUE(terminal_->failure_replies[0].request_bytes_sent);
  EXPECT_EQ(encoder_.header_calls, 1);
  EXPECT_EQ(encoder_.headers->status, 599) << "not the held 409";
  EXPECT_EQ(encoder_.body, R"({"error":{"code":"fake_failure_policy","message":"reset"}})");
  EXPECT_EQ(owner_.completions, 1);
}

// ---- Local replies --------------------------------------------------------------------------

TEST_F(ActiveStreamTest, SendLocalReplyWritesTheJsonEnvelopeAndEndsUpstreamWork) {
  start(2);
  filter(0).on_request_headers = [this](RequestHeaders&, bool) {
    HeaderMap extra;
    extra.add("Retry-After", "2");
    filter(0).callbacks().sendLocalReply(429, "slow_down", "too \"many\" requests", extra);
    return FilterStatus::StopAndWait;
  };
  sendRequestHeaders(false);
  sendRequestData("ignored", true);
  EXPECT_EQ(terminal_->request_headers_calls, 0) << "the chain stops at a local reply";
  EXPECT_EQ(terminal_->body, "");
  EXPECT_THAT(log_, ::testing::Not(::testing::Contains("f1:reqh /v1/stream/s1")));
  ASSERT_TRUE(encoder_.headers.has_value());
  EXPECT_EQ(encoder_.headers->status, 429);
  const std::string expected =
      R"({"error":{"code":"slow_down","message":"too \"many\" requests"}})";
  EXPECT_EQ(encoder_.body, expected);
  EXPECT_EQ(encoder_.headers->headers.get("content-type"), "application/json");
  EXPECT_EQ(encoder_.headers->headers.get("cache-control"), "no-store");
  EXPECT_EQ(encoder_.headers->headers.get("retry-after"), "2");
  EXPECT_EQ(encoder_.headers->headers.get("content-length"), std::to_string(expected.size()));
  EXPECT_TRUE(encoder_.ended);
  EXPECT_GE(terminal_->resets, 1);
  EXPECT_EQ(owner_.completions, 1);
  EXPECT_TRUE(stream_->complete());
  EXPECT_EQ(ferry::testing::statOf(store_, "ferry_responses_total", {{"class", "4xx"}}), 1);
}

TEST_F(ActiveStreamTest, LocalReplyDropsAHeldResponse) {
  start(1);
  filter(0).on_response_headers = [](ResponseHeaders&, bool) { return FilterStatus::StopAndWait; };
  sendRequestHeaders(true);
  terminal_->respond(409, {}, false);
  terminal_->respondData("held", true);
  filter(0).callbacks().sendLocalReply(503, "forward_failed", "m", {});
  EXPECT_EQ(encoder_.header_calls, 1);
  EXPECT_EQ(encoder_.headers->status, 503);
  EXPECT_EQ(encoder_.body, R"({"error":{"code":"forward_failed","message":"m"}})");
}

// ---- Other paths ----------------------------------------------------------------------------

TEST_F(ActiveStreamTest, InformationalGoesToTheClient) {
  start(1);
  sendRequestHeaders(false);
  terminal_->callbacks().onUpstreamInformational(
      std::make_unique<ResponseHeaders>(ResponseHeaders{100, "", {}}));
  EXPECT_THAT(encoder_.informational, ElementsAre(100));
}

TEST_F(ActiveStreamTest, DownstreamResetEndsUpstreamAndDestroysFilters) {
  start(1);
  sendRequestHeaders(false);
  stream_->onDownstreamReset();
  EXPECT_GE(terminal_->resets, 1);
  EXPECT_EQ(filter(0).destroyed, 1);
  EXPECT_EQ(terminal_->destroyed, 1);
  EXPECT_EQ(owner_.completions, 0) << "the connection manager already knows";
  EXPECT_EQ(stat("ferry_downstream_resets_total"), 1);
  // Late upstream events are ignored.
  terminal_->respond(200, {}, true);
  EXPECT_EQ(encoder_.header_calls, 0);
}

TEST_F(ActiveStreamTest, WatermarksReachBothSides) {
  start(1);
  sendRequestHeaders(false);
  terminal_->callbacks().pauseRequestBody(true);
  terminal_->callbacks().pauseRequestBody(true);  // counted once
  terminal_->callbacks().pauseRequestBody(false);
  EXPECT_THAT(encoder_.pauses, ElementsAre(true, false));
  stream_->onAboveWriteBufferHighWatermark();
  stream_->onBelowWriteBufferLowWatermark();
  EXPECT_THAT(terminal_->response_pauses, ElementsAre(true, false));
}

// The client's request is read again only when no pause reason is left (pause_reasons.h): the
// connection's share clearing does not resume a read the upstream's full buffer still holds.
// The encoder's readDisable is taken as a plain on/off switch, as HTTP/1.1's connection is.
TEST_F(ActiveStreamTest, RequestReadResumesOnlyWhenNoPauseReasonIsLeft) {
  start(1);
  owner_.hold_new_streams = true;
  sendRequestHeaders(false);  // waits for the connection's share
  stream_->pauseRequestBody(true);
  EXPECT_THAT(encoder_.pauses, ElementsAre(true)) << "already paused: no second call";
  stream_->onConnectionShareGranted();
  EXPECT_THAT(encoder_.pauses, ElementsAre(true)) << "the upstream's buffer still holds it";
  stream_->pauseRequestBody(false);
  EXPECT_THAT(encoder_.pauses, ElementsAre(true, false));
  EXPECT_EQ(ferry::testing::statOf(store_, "ferry_watermark_pauses_total",
                                   {{"paused", "downstream_read"}}),
            1);
}

TEST_F(ActiveStreamTest, ReplayBytesHeldGaugeReturnsToZeroAtTheEnd) {
  start(1);
  sendRequestHeaders(false);
  sendRequestData("abc", true);
  EXPECT_EQ(stat("ferry_replay_held_bytes"), 3);
  EXPECT_EQ(stat("ferry_streams_active"), 1);
  terminal_->respond(200, {}, true);
  EXPECT_EQ(stat("ferry_replay_held_bytes"), 0);
  stream_.reset();
  EXPECT_EQ(stat("ferry_streams_active"), 0);
}

}  // namespace
}  // namespace ferry::http
