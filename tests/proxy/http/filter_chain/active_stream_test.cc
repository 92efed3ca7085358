// Tests proxy/http/active_stream.cc: filter iteration both ways, held requests and responses,
// the replay body, a replay's response replacing a held one, upstream failures and local
// replies. The terminal filter is a fake: no sockets, the test plays the upstream.

#include "proxy/http/active_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "proxy/stats/proxy_stats.h"
#include "tests/proxy/http/filter_chain/stream_fakes.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::http {
namespace {

using ::testing::ElementsAre;
using testing::FakeResponseEncoder;
using testing::FakeStreamOwner;
using testing::FakeTerminal;
using testing::FakeTerminalFactory;
using testing::ScriptedFilter;
using testing::ScriptedFilterFactory;

class ActiveStreamTest : public ::testing::Test {
 protected:
  ActiveStreamTest() : proxy_stats_(store_) {}

  // Builds a stream with `n` scripted filters named f0..f{n-1}.
  void start(int n, uint32_t replay_limit = 64 * 1024) {
    config_.replay_limit = replay_limit;
    for (int i = 0; i < n; ++i) {
      auto factory = std::make_shared<ScriptedFilterFactory>("f" + std::to_string(i), log_);
      factories_.push_back(factory);
      config_.filters.push_back(factory);
    }
    terminal_factory_ = std::make_shared<FakeTerminalFactory>(log_);
    config_.terminal = terminal_factory_;
    stream_ = std::make_unique<ActiveStream>(owner_, encoder_, dispatcher_, config_, proxy_stats_);
    terminal_ = terminal_factory_->last;
    ASSERT_NE(terminal_, nullptr);
  }
  ScriptedFilter& filter(int i) { return *factories_[i]->created.at(0); }

  void sendRequestHeaders(bool end_stream, const std::string& path = "/v1/stream/s1") {
    auto h = std::make_unique<RequestHeaders>();
    h->method = "POST";
    h->path = path;
    h->authority = "ferry";
    stream_->onRequestHeaders(std::move(h), end_stream);
  }
  void sendRequestData(const std::string& bytes, bool end_stream) {
    Buffer b;
    b.add(bytes);
    stream_->onRequestData(b, end_stream);
  }
  // A 409 from the local instance, held whole by filter `i` (StopAndBuffer); `then` runs when
  // the filter sees the whole body.
  void holdConflict(int i, std::function<FilterStatus(Buffer&)> then) {
    filter(i).on_response_headers = [](ResponseHeaders& h, bool) {
      return h.status == 409 ? FilterStatus::StopAndBuffer : FilterStatus::Continue;
    };
    filter(i).on_response_body = [then, this](Buffer& data, bool end) {
      if (!end) return FilterStatus::Continue;
      if (held_conflict_seen_) return FilterStatus::Continue;  // a later response
      held_conflict_seen_ = true;
      return then(data);
    };
  }
  void sendConflict() {
    terminal_->respond(409, {{"content-type", "application/json"}, {"streams-replay-to", "b"}},
                       false);
    terminal_->respondData("{\"error\":", false);
    terminal_->respondData("\"409\"}", true);
  }
  int64_t stat(const std::string& name) { return ferry::testing::statOf(store_, name); }

  testing::Log log_;
  stats::Store store_;
  stats::ProxyStats proxy_stats_;
  event::Dispatcher dispatcher_;
  StreamConfig config_;
  std::vector<std::shared_ptr<ScriptedFilterFactory>> factories_;
  std::shared_ptr<FakeTerminalFactory> terminal_factory_;
  FakeStreamOwner owner_;
  FakeResponseEncoder encoder_{log_};
  std::unique_ptr<ActiveStream> stream_;
  FakeTerminal* terminal_ = nullptr;
  bool held_conflict_seen_ = false;
  const UpstreamTarget owner_target_{"b", "http", "10.0.0.2", 8081, ""};
};

// ---- Iteration order ------------------------------------------------------------------------

TEST_F(ActiveStreamTest, RequestRunsFiltersInOrderThenTerminal) {
  start(3);
  sendRequestHeaders(false);
  sendRequestData("ab", false);
  sendRequestData("cd", true);
  EXPECT_THAT(log_,
              ElementsAre("f0:reqh /v1/stream/s1", "f1:reqh /v1/stream/s1", "f2:reqh /v1/stream/s1",
                          "T:reqh /v1/stream/s1",                                 //
                          "f0:reqb ab", "f1:reqb ab", "f2:reqb ab", "T:reqb ab",  //
                          "f0:reqb cd end", "f1:reqb cd end", "f2:reqb cd end", "T:reqb cd end"));
  EXPECT_TRUE(stream_->requestComplete());
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
  EXPECT_TRUE(stream_->requestComplete());
}

TEST_F(ActiveStreamTest, RequestWithoutBodyEndsOnHeaders) {
  start(1);
  sendRequestHeaders(true);
  EXPECT_THAT(log_, ElementsAre("f0:reqh /v1/stream/s1 end", "T:reqh /v1/stream/s1 end"));
  EXPECT_TRUE(stream_->requestComplete());
}

TEST_F(ActiveStreamTest, RequestFilterEditsReachTheTerminal) {
  start(1);
  filter(0).on_request_headers = [](RequestHeaders& h, bool) {
    h.path = "/rewritten";
    return FilterStatus::Continue;
  };
  sendRequestHeaders(true);
  EXPECT_EQ(terminal_->request_path, "/rewritten");
  EXPECT_EQ(stream_->requestHeaders().path, "/rewritten");
}

TEST_F(ActiveStreamTest, ResponseRunsFiltersInReverseOrderThenClient) {
  start(3);
  sendRequestHeaders(true);
  log_.clear();
  terminal_->respond(200, {{"x", "1"}}, false);
  terminal_->respondData("hello", true);
  EXPECT_THAT(log_, ElementsAre("f2:resh 200", "f1:resh 200", "f0:resh 200", "client:headers 200",
                                "f2:resb hello end", "f1:resb hello end", "f0:resb hello end",
                                "client:data hello end"));
  EXPECT_EQ(owner_.completions, 1);
  EXPECT_FALSE(owner_.last_cut);
  EXPECT_EQ(terminal_->resets, 1) << "a complete response releases the upstream";
  EXPECT_EQ(filter(0).destroyed, 1);
  EXPECT_EQ(terminal_->destroyed, 1);
  EXPECT_EQ(ferry::testing::statOf(store_, "ferry_responses_total", {{"class", "2xx"}}), 1);
}

// ---- Holding the request --------------------------------------------------------------------

TEST_F(ActiveStreamTest, StopAndWaitOnRequestHeadersHoldsBodyUntilContinue) {
  start(2);
  filter(0).on_request_headers = [](RequestHeaders&, bool) { return FilterStatus::StopAndWait; };
  sendRequestHeaders(false);
  sendRequestData("one-", false);
  sendRequestData("two-", false);
  sendRequestData("three", true);
  EXPECT_THAT(log_, ElementsAre("f0:reqh /v1/stream/s1")) << "nothing passes a stopped filter";
  EXPECT_EQ(terminal_->request_headers_calls, 0);
  EXPECT_FALSE(stream_->requestComplete());

  log_.clear();
  filter(0).callbacks().continueRequest();
  // Headers resume after the stopped filter; the held body then runs the whole chain, in order,
  // as one piece that ends the request.
  EXPECT_THAT(log_, ElementsAre("f1:reqh /v1/stream/s1", "T:reqh /v1/stream/s1",
                                "f0:reqb one-two-three end", "f1:reqb one-two-three end",
                                "T:reqb one-two-three end"));
  EXPECT_EQ(terminal_->body, "one-two-three");
  EXPECT_TRUE(stream_->requestComplete());
}

TEST_F(ActiveStreamTest, BodyAfterContinueFollowsHeldBody) {
  start(1);
  filter(0).on_request_headers = [](RequestHeaders&, bool) { return FilterStatus::StopAndWait; };
  sendRequestHeaders(false);
  sendRequestData("held", false);
  filter(0).callbacks().continueRequest();
  sendRequestData("-live", true);
  EXPECT_EQ(terminal_->body, "held-live");
  EXPECT_TRUE(terminal_->request_ended);
}

TEST_F(ActiveStreamTest, StopAndWaitOnRequestBodyHoldsLaterChunks) {
  start(1);
  int calls = 0;
  filter(0).on_request_body = [&calls](Buffer&, bool) {
    return ++calls == 1 ? FilterStatus::StopAndWait : FilterStatus::Continue;
  };
  sendRequestHeaders(false);
  sendRequestData("a", false);
  sendRequestData("b", true);
  EXPECT_EQ(terminal_->body, "");
  filter(0).callbacks().continueRequest();
  EXPECT_EQ(terminal_->body, "ab");
  EXPECT_TRUE(terminal_->request_ended);
}

// ---- Filters around a holder see the body exactly once, in order -----------------------------

// Log entries of one filter, in order.
std::vector<std::string> entriesOf(const testing::Log& log, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : log) {
    if (e.rfind(prefix, 0) == 0) out.push_back(e);
  }
  return out;
}

TEST_F(ActiveStreamTest, FiltersBeforeARequestHolderSeeTheBodyAsItArrives) {
  start(2);
  filter(1).on_request_headers = [](RequestHeaders&, bool) { return FilterStatus::StopAndWait; };
  sendRequestHeaders(false);
  sendRequestData("a", false);
  sendRequestData("b", true);
  EXPECT_THAT(entriesOf(log_, "f0:reqb"), ElementsAre("f0:reqb a", "f0:reqb b end"));
  EXPECT_TRUE(entriesOf(log_, "f1:reqb").empty()) << "the holder sees nothing yet";
  EXPECT_EQ(terminal_->body, "");
  filter(1).callbacks().continueRequest();
  EXPECT_THAT(entriesOf(log_, "f0:reqb"), ElementsAre("f0:reqb a", "f0:reqb b end"))
      << "f0 does not see the body twice";
  EXPECT_THAT(entriesOf(log_, "f1:reqb"), ElementsAre("f1:reqb ab end"));
  EXPECT_EQ(terminal_->body, "ab");
  EXPECT_TRUE(terminal_->request_ended);
}

TEST_F(ActiveStreamTest, RequestHolderSeesLaterChunksOnceAfterContinue) {
  start(1);
  int calls = 0;
  filter(0).on_request_body = [&calls](Buffer&, bool) {
    return ++calls == 1 ? FilterStatus::StopAndWait : FilterStatus::Continue;
  };
  sendRequestHeaders(false);
  sendRequestData("a", false);
  sendRequestData("b", true);
  filter(0).callbacks().continueRequest();
  // "a" was seen when the filter stopped on it; "b" reaches the filter once, after continue.
  EXPECT_THAT(entriesOf(log_, "f0:reqb"), ElementsAre("f0:reqb a", "f0:reqb b end"));
  EXPECT_EQ(terminal_->body, "ab");
  EXPECT_TRUE(terminal_->request_ended);
}

TEST_F(ActiveStreamTest, FiltersNearerTheUpstreamSeeTheBodyWhileAnotherHoldsTheResponse) {
  start(2);
  // f1 is first on the response path and lets everything through; f0 holds the response.
  filter(0).on_response_headers = [](ResponseHeaders&, bool) {
    return FilterStatus::StopAndBuffer;
  };
  sendRequestHeaders(true);
  terminal_->respond(200, {}, false);
  terminal_->respondData("x", false);
  terminal_->respondData("y", false);
  EXPECT_THAT(entriesOf(log_, "f1:resb"), ElementsAre("f1:resb x", "f1:resb y"))
      << "f1 already let the head through: it sees the body as it arrives";
  EXPECT_TRUE(entriesOf(log_, "f0:resb").empty());
  terminal_->respondData("z", true);
  EXPECT_THAT(entriesOf(log_, "f1:resb"), ElementsAre("f1:resb x", "f1:resb y", "f1:resb z end"));
  EXPECT_THAT(entriesOf(log_, "f0:resb"), ElementsAre("f0:resb xyz end"));
  EXPECT_EQ(encoder_.body, "xyz");
  EXPECT_TRUE(encoder_.ended);
}

TEST_F(ActiveStreamTest, ResponseHolderThatWaitedSeesTheHeldBodyAfterContinue) {
  start(1);
  filter(0).on_response_headers = [](ResponseHeaders&, bool) { return FilterStatus::StopAndWait; };
  sendRequestHeaders(true);
  terminal_->respond(200, {}, false);
  terminal_->respondData("early", false);
  EXPECT_TRUE(entriesOf(log_, "f0:resb").empty());
  filter(0).callbacks().continueResponse();
  EXPECT_THAT(entriesOf(log_, "f0:resb"), ElementsAre("f0:resb early"));
  terminal_->respondData("-late", true);
  EXPECT_THAT(entriesOf(log_, "f0:resb"), ElementsAre("f0:resb early", "f0:resb -late end"));
  EXPECT_EQ(encoder_.body, "early-late");
}

// ---- Holding the response -------------------------------------------------------------------

TEST_F(ActiveStreamTest, StopAndBufferOnResponseHeadersGivesTheWholeBodyAtEnd) {
  start(2);
  // f1 is first on the response path; it holds the response.
  std::vector<std::string> seen;
  filter(1).on_response_headers = [](ResponseHeaders&, bool) {
    return FilterStatus::StopAndBuffer;
  };
  filter(1).on_response_body = [&seen](Buffer& data, bool end) {
    seen.push_back(data.toString() + (end ? " end" : ""));
    return FilterStatus::Continue;
  };
  sendRequestHeaders(true);
  terminal_->respond(200, {{"k", "v"}}, false);
  terminal_->respondData("x", false);
  terminal_->respondData("y", false);
  EXPECT_EQ(encoder_.header_calls, 0);
  EXPECT_TRUE(seen.empty()) << "a buffering filter sees no partial body";
  terminal_->respondData("z", true);
  EXPECT_THAT(seen, ElementsAre("xyz end"));
  // Returning Continue at the end releases it on down the chain to the client.
  EXPECT_EQ(encoder_.header_calls, 1);
  EXPECT_EQ(encoder_.headers->status, 200);
  EXPECT_EQ(encoder_.body, "xyz");
  EXPECT_TRUE(encoder_.ended);
  EXPECT_EQ(owner_.completions, 1);
  // f0 sees what f1 let through, in order.
  auto first_f0 = std::find(log_.begin(), log_.end(), "f0:resh 200");
  ASSERT_NE(first_f0, log_.end());
  EXPECT_EQ(*(first_f0 + 1), "client:headers 200");
  EXPECT_EQ(*(first_f0 + 2), "f0:resb xyz end");
}

TEST_F(ActiveStreamTest, StopAndBufferOnHeadersOnlyResponseGetsEmptyBodyAtOnce) {
  start(1);
  int body_calls = 0;
  filter(0).on_response_headers = [](ResponseHeaders&, bool) {
    return FilterStatus::StopAndBuffer;
  };
  filter(0).on_response_body = [&body_calls](Buffer& data, bool end) {
    ++body_calls;
    EXPECT_TRUE(data.empty());
    EXPECT_TRUE(end);
    return FilterStatus::Continue;
  };
  sendRequestHeaders(true);
  terminal_->respond(204, {}, true);
  EXPECT_EQ(body_calls, 1);
  EXPECT_EQ(encoder_.headers->status, 204);
  EXPECT_TRUE(encoder_.ended);
  EXPECT_EQ(owner_.completions, 1);
}

TEST_F(ActiveStreamTest, ContinueResponseReleasesHeldHeadersAndBodyUnchanged) {
  start(1);
  filter(0).on_response_headers = [](ResponseHeaders&, bool) { return FilterStatus::StopAndWait; };
  sendRequestHeaders(true);
  terminal_->respond(409, {{"content-type", "application/json"}, {"streams-replay-to", "b"}},
                     false);
  terminal_->respondData("{\"error\":", false);
  terminal_->respondData("{}}", true);
  EXPECT_EQ(encoder_.header_calls, 0);
  EXPECT_EQ(owner_.completions, 0);

  filter(0).callbacks().continueResponse();
  ASSERT_TRUE(encoder_.headers.has_value());
  EXPECT_EQ(encoder_.headers->status, 409);
  // Unchanged but for the request's id, which every response carries.
  ASSERT_EQ(encoder_.headers->headers.size(), 3u);
  EXPECT_EQ(encoder_.headers->headers.get("content-type"), "application/json");
  EXPECT_EQ(encoder_.headers->headers.get("streams-replay-to"), "b");
  EXPECT_TRUE(encoder_.headers->headers.get("x-request-id"));
  EXPECT_EQ(encoder_.body, "{\"error\":{}}");
  EXPECT_TRUE(encoder_.ended);
  EXPECT_EQ(owner_.completions, 1);
  EXPECT_FALSE(owner_.last_cut);
}

TEST_F(ActiveStreamTest, ContinueResponseBeforeTheEndStreamsTheRest) {
  start(1);
  filter(0).on_response_headers = [](ResponseHeaders&, bool) { return FilterStatus::StopAndWait; };
  sendRequestHeaders(true);
  terminal_->respond(200, {}, false);
  terminal_->respondData("early", false);
  filter(0).callbacks().continueResponse();
  EXPECT_EQ(encoder_.body, "early");
  EXPECT_FALSE(encoder_.ended);
  terminal_->respondData("-late", true);
  EXPECT_EQ(encoder_.body, "early-late");
  EXPECT_TRUE(encoder_.ended);
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
    EXPECT_TRUE(filter(0).callbacks().replayRequest(owner_target_, mark));
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
    EXPECT_TRUE(filter(0).callbacks().replayRequest(owner_target_, {}));
    return FilterStatus::StopAndWait;
  });
  sendConflict();
  ASSERT_EQ(terminal_->replays.size(), 1u);
  EXPECT_EQ(terminal_->replays[0].body, "part1-");
  EXPECT_FALSE(stream_->requestComplete());

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
    EXPECT_TRUE(filter(1).callbacks().replayRequest(owner_target_, {}));
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
    EXPECT_FALSE(filter(0).callbacks().replayRequest(owner_target_, {}));
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
    EXPECT_TRUE(filter(1).callbacks().replayRequest(owner_target_, {}));
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
  EXPECT_FALSE(filter(0).callbacks().replayRequest(owner_target_, {}));
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

TEST_F(ActiveStreamTest, ConnectFailureAnswers503WithRetryAfter) {
  start(1);
  sendRequestHeaders(true);
  terminal_->callbacks().onUpstreamFailure(
      failure(UpstreamFailure::Kind::ConnectFailed, false, "connection refused"));
  ASSERT_EQ(filter(0).failures.size(), 1u) << "filters are asked first";
  ASSERT_TRUE(encoder_.headers.has_value());
  EXPECT_EQ(encoder_.headers->status, 503);
  EXPECT_EQ(encoder_.headers->headers.get("retry-after"), "1");
  EXPECT_EQ(encoder_.headers->headers.get("content-type"), "application/json");
  EXPECT_EQ(
      encoder_.body,
      R"({"error":{"code":"upstream_unavailable","message":"the upstream cannot be reached: connection refused"}})");
  EXPECT_TRUE(encoder_.ended);
  EXPECT_EQ(owner_.completions, 1);
  EXPECT_FALSE(owner_.last_cut);
  EXPECT_GE(terminal_->resets, 1);
}

TEST_F(ActiveStreamTest, ResetAfterSendAnswers502OutcomeUnknown) {
  start(1);
  sendRequestHeaders(false);
  sendRequestData("x", true);
  terminal_->callbacks().onUpstreamFailure(failure(UpstreamFailure::Kind::Reset, true));
  EXPECT_EQ(encoder_.headers->status, 502);
  EXPECT_FALSE(encoder_.headers->headers.has("retry-after")) << "must not invite a replay";
  EXPECT_THAT(encoder_.body, ::testing::HasSubstr("\"code\":\"upstream_outcome_unknown\""));
  EXPECT_EQ(stat("ferry_upstream_unknown_outcome_total"), 1);
  EXPECT_EQ(owner_.completions, 1);
}

TEST_F(ActiveStreamTest, ResetBeforeSendAnswers503) {
  start(1);
  sendRequestHeaders(true);
  terminal_->callbacks().onUpstreamFailure(failure(UpstreamFailure::Kind::Reset, false));
  EXPECT_EQ(encoder_.headers->status, 503);
  EXPECT_EQ(encoder_.headers->headers.get("retry-after"), "1");
  EXPECT_EQ(stat("ferry_upstream_unknown_outcome_total"), 0);
}

// A request sent whole with no response head in time (the router's response_head timer):
// the local instance may have applied it, so 504 with its own code, not a 503 to retry.
TEST_F(ActiveStreamTest, ResponseHeadTimeoutAnswers504UpstreamResponseTimeout) {
  start(1);
  sendRequestHeaders(true);
  terminal_->callbacks().onUpstreamFailure(
      failure(UpstreamFailure::Kind::ResponseHeadTimeout, true));
  EXPECT_EQ(encoder_.headers->status, 504);
  EXPECT_THAT(encoder_.body, ::testing::HasSubstr("\"code\":\"upstream_response_timeout\""));
  EXPECT_FALSE(encoder_.headers->headers.get("retry-after").has_value());
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
    EXPECT_TRUE(filter(0).callbacks().replayRequest(owner_target_, {}));
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
    EXPECT_TRUE(filter(0).callbacks().replayRequest(owner_target_, {}));
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
  stream_->onDownstreamWatermark(true);
  stream_->onDownstreamWatermark(false);
  EXPECT_THAT(terminal_->response_pauses, ElementsAre(true, false));
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
