// Tests proxy/http/filter_chain.cc: filter iteration both ways, held requests and responses,
// each filter seeing each byte once. First through the ActiveStream that owns the chain (its
// ends are the stream's: the terminal filter and the client's encoder), then the chain alone
// against fake ends.

#include "proxy/http/filter_chain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/proxy/http/stream_fixture.h"
#include "tests/support/http/fake_filter_callbacks.h"

namespace ferry::http {
namespace {

using ::testing::ElementsAre;

class FilterChainTest : public testing::StreamFixture {};

// ---- Iteration order ------------------------------------------------------------------------

TEST_F(FilterChainTest, RequestRunsFiltersInOrderThenTerminal) {
  start(3);
  sendRequestHeaders(false);
  sendRequestData("ab", false);
  sendRequestData("cd", true);
  EXPECT_THAT(log_,
              ElementsAre("f0:reqh /v1/stream/s1", "f1:reqh /v1/stream/s1", "f2:reqh /v1/stream/s1",
                          "T:reqh /v1/stream/s1",                                 //
                          "f0:reqb ab", "f1:reqb ab", "f2:reqb ab", "T:reqb ab",  //
                          "f0:reqb cd end", "f1:reqb cd end", "f2:reqb cd end", "T:reqb cd end"));
  EXPECT_TRUE(terminal_->request_ended);
}

TEST_F(FilterChainTest, RequestWithoutBodyEndsOnHeaders) {
  start(1);
  sendRequestHeaders(true);
  EXPECT_THAT(log_, ElementsAre("f0:reqh /v1/stream/s1 end", "T:reqh /v1/stream/s1 end"));
  EXPECT_TRUE(terminal_->request_ended);
}

TEST_F(FilterChainTest, RequestFilterEditsReachTheTerminal) {
  start(1);
  filter(0).on_request_headers = [](RequestHeaders& h, bool) {
    h.path = "/rewritten";
    return FilterStatus::Continue;
  };
  sendRequestHeaders(true);
  EXPECT_EQ(terminal_->request_path, "/rewritten");
  EXPECT_EQ(stream_->requestHeaders().path, "/rewritten");
}

TEST_F(FilterChainTest, ResponseRunsFiltersInReverseOrderThenClient) {
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

TEST_F(FilterChainTest, StopAndWaitOnRequestHeadersHoldsBodyUntilContinue) {
  start(2);
  filter(0).on_request_headers = [](RequestHeaders&, bool) { return FilterStatus::StopAndWait; };
  sendRequestHeaders(false);
  sendRequestData("one-", false);
  sendRequestData("two-", false);
  sendRequestData("three", true);
  EXPECT_THAT(log_, ElementsAre("f0:reqh /v1/stream/s1")) << "nothing passes a stopped filter";
  EXPECT_EQ(terminal_->request_headers_calls, 0);
  EXPECT_FALSE(terminal_->request_ended);

  log_.clear();
  filter(0).callbacks().continueRequest();
  // Headers resume after the stopped filter; the held body then runs the whole chain, in order,
  // as one piece that ends the request.
  EXPECT_THAT(log_, ElementsAre("f1:reqh /v1/stream/s1", "T:reqh /v1/stream/s1",
                                "f0:reqb one-two-three end", "f1:reqb one-two-three end",
                                "T:reqb one-two-three end"));
  EXPECT_EQ(terminal_->body, "one-two-three");
  EXPECT_TRUE(terminal_->request_ended);
}

TEST_F(FilterChainTest, BodyAfterContinueFollowsHeldBody) {
  start(1);
  filter(0).on_request_headers = [](RequestHeaders&, bool) { return FilterStatus::StopAndWait; };
  sendRequestHeaders(false);
  sendRequestData("held", false);
  filter(0).callbacks().continueRequest();
  sendRequestData("-live", true);
  EXPECT_EQ(terminal_->body, "held-live");
  EXPECT_TRUE(terminal_->request_ended);
}

TEST_F(FilterChainTest, StopAndWaitOnRequestBodyHoldsLaterChunks) {
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

TEST_F(FilterChainTest, FiltersBeforeARequestHolderSeeTheBodyAsItArrives) {
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

TEST_F(FilterChainTest, RequestHolderSeesLaterChunksOnceAfterContinue) {
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

TEST_F(FilterChainTest, FiltersNearerTheUpstreamSeeTheBodyWhileAnotherHoldsTheResponse) {
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

TEST_F(FilterChainTest, ResponseHolderThatWaitedSeesTheHeldBodyAfterContinue) {
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

TEST_F(FilterChainTest, StopAndBufferOnResponseHeadersGivesTheWholeBodyAtEnd) {
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

TEST_F(FilterChainTest, StopAndBufferOnHeadersOnlyResponseGetsEmptyBodyAtOnce) {
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

TEST_F(FilterChainTest, ContinueResponseReleasesHeldHeadersAndBodyUnchanged) {
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

TEST_F(FilterChainTest, ContinueResponseBeforeTheEndStreamsTheRest) {
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

// ---- The chain alone -------------------------------------------------------------------------

// The chain's two ends (the stream's part), recording what passes; what filters may ask is the
// recording fake's, with continue*() driving this chain.
class FakeEnds : public FilterChainCallbacks, public ferry::testing::FakeFilterCallbacks {
 public:
  explicit FakeEnds(testing::Log& log) : log_(log) {
    forbid(Call::InternalRequest, "these tests' filters issue no internal request");
  }
  // FilterChainCallbacks
  void onChainRequestHeaders(RequestHeaders& h, bool end) override {
    log_.push_back("end:reqh " + h.path + (end ? " end" : ""));
  }
  void onChainRequestData(Buffer& data, bool end_stream) override {
    log_.push_back("end:reqb " + data.toString() + (end_stream ? " end" : ""));
    data.clear();
  }
  void onChainResponseHeaders(bool end) override {
    started = true;
    log_.push_back(std::string("end:resh") + (end ? " end" : ""));
  }
  void onChainResponseData(Buffer& data, bool end_stream) override {
    log_.push_back("end:resb " + data.toString() + (end_stream ? " end" : ""));
    data.clear();
  }
  bool streamEnded() const override { return stream_ended; }
  bool replayPending() const override { return replay_pending; }
  bool responseStarted() const override { return started; }
  // StreamFilterCallbacks: a filter's continue*() resumes the chain.
  void continueRequest() override { chain->continueRequest(); }
  void continueResponse() override { chain->continueResponse(); }

  FilterChain* chain = nullptr;
  bool stream_ended = false;
  bool replay_pending = false;
  bool started = false;

 private:
  testing::Log& log_;
};

class FilterChainAloneTest : public ::testing::Test {
 protected:
  void make(int n) {
    head_.method = "POST";
    head_.path = "/p";
    response_.status = 200;
    for (int i = 0; i < n; ++i) {
      auto factory =
          std::make_shared<testing::ScriptedFilterFactory>("f" + std::to_string(i), log_);
      factories_.push_back(factory);
      list_.push_back(factory);
    }
    chain_ = std::make_unique<FilterChain>(list_, worker_, ends_, ends_);
    ends_.chain = chain_.get();
  }
  testing::ScriptedFilter& filter(int i) { return *factories_[i]->created.at(0); }
  void data(const std::string& bytes, bool end) {
    Buffer b;
    b.add(bytes);
    chain_->onRequestData(b, end);
  }

  testing::Log log_;
  event::Dispatcher dispatcher_;
  event::WorkerSlots slots_;
  event::WorkerContext worker_{dispatcher_, slots_};
  FakeEnds ends_{log_};
  std::vector<std::shared_ptr<testing::ScriptedFilterFactory>> factories_;
  std::vector<std::shared_ptr<const FilterFactory>> list_;
  std::unique_ptr<FilterChain> chain_;
  RequestHeaders head_;
  ResponseHeaders response_;
};

TEST_F(FilterChainAloneTest, BodyBeforeTheRequestRunsWaitsAndFollowsTheHead) {
  make(2);
  chain_->setRequestHead(head_, false);
  data("ab", false);
  data("cd", true);
  EXPECT_TRUE(log_.empty()) << "nothing runs before runRequest()";
  chain_->runRequest();
  EXPECT_THAT(log_, ElementsAre("f0:reqh /p", "f1:reqh /p", "end:reqh /p", "f0:reqb abcd end",
                                "f1:reqb abcd end", "end:reqb abcd end"));
  EXPECT_TRUE(chain_->requestHeadersPassed());
}

TEST_F(FilterChainAloneTest, ResponseRunsInReverseToItsEnd) {
  make(2);
  chain_->setRequestHead(head_, true);
  chain_->runRequest();
  log_.clear();
  chain_->onResponseHeaders(response_, false);
  Buffer body;
  body.add("x");
  chain_->onResponseData(body, true);
  EXPECT_THAT(log_, ElementsAre("f1:resh 200", "f0:resh 200", "end:resh", "f1:resb x end",
                                "f0:resb x end", "end:resb x end"));
}

// A filter that ends the stream (a local reply) stops the iteration at once.
TEST_F(FilterChainAloneTest, AnEndedStreamStopsTheIteration) {
  make(2);
  filter(0).on_request_headers = [this](RequestHeaders&, bool) {
    ends_.stream_ended = true;
    return FilterStatus::Continue;
  };
  chain_->setRequestHead(head_, true);
  chain_->runRequest();
  EXPECT_THAT(log_, ElementsAre("f0:reqh /p end"));
}

TEST_F(FilterChainAloneTest, AHeldResponseIsHeldUntilDropped) {
  make(1);
  filter(0).on_response_headers = [](ResponseHeaders&, bool) {
    return FilterStatus::StopAndBuffer;
  };
  chain_->setRequestHead(head_, true);
  chain_->runRequest();
  chain_->onResponseHeaders(response_, false);
  EXPECT_TRUE(chain_->responseHeld());
  chain_->dropHeldResponse();
  EXPECT_FALSE(chain_->responseHeld());
}

// Failures go in response-path order until a filter claims one; a cut reaches every filter.
TEST_F(FilterChainAloneTest, FailuresAskTheLastFilterFirstUntilOneClaims) {
  make(3);
  filter(1).on_failure = [](const UpstreamFailure&) { return true; };
  EXPECT_TRUE(chain_->claimFailure({}));
  EXPECT_EQ(filter(2).failures.size(), 1u);
  EXPECT_EQ(filter(1).failures.size(), 1u);
  EXPECT_TRUE(filter(0).failures.empty());
  chain_->onResponseCut({});
  EXPECT_EQ(filter(0).failures.size(), 1u);
  EXPECT_EQ(filter(1).failures.size(), 2u);
  filter(1).on_failure = nullptr;
  EXPECT_FALSE(chain_->claimFailure({})) << "nobody claims it";
}

TEST_F(FilterChainAloneTest, DestroyReachesEveryFilterOnce) {
  make(2);
  chain_->destroy();
  chain_.reset();
  EXPECT_EQ(filter(0).destroyed, 1);
  EXPECT_EQ(filter(1).destroyed, 1);
}

}  // namespace
}  // namespace ferry::http
