// Tests proxy/http/internal_stream.cc (internal requests, internal_request.h) between the fakes
// of stream_fixture.h: a client stream whose filter f0 issues an internal request; the internal
// request's own ActiveStream runs the same filters (f0 again) and its own fake terminal, which
// the test plays as the upstream. What reaches the filter's callbacks, in which order; a body;
// cancelling; failures before and after the head; pause() reaching the router; the issuing
// stream ending its internal requests; identity; the access log record. No sockets: the
// terminal is a fake (the router's pause and reset are tests/filters/router/'s).

#include "proxy/http/internal_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "proxy/access_log/access_log.h"
#include "tests/proxy/http/stream_fixture.h"

namespace ferry::http {
namespace {

using ::testing::ElementsAre;
using testing::FakeTerminal;
using ::testing::HasSubstr;
using testing::ScriptedFilter;

// The issuing filter's side: logs every callback into the shared log as "ir:...".
class RecordingCallbacks : public InternalResponseCallbacks {
 public:
  explicit RecordingCallbacks(testing::Log& log) : log_(log) {}
  void onInternalResponseHeaders(ResponseHeadersPtr headers, bool end_stream) override {
    head = std::move(headers);
    log_.push_back("ir:headers " + std::to_string(head->status) + (end_stream ? " end" : ""));
    if (after) after();
  }
  void onInternalResponseData(Buffer& data, bool end_stream) override {
    log_.push_back("ir:data " + data.toString() + (end_stream ? " end" : ""));
    data.clear();
    if (after) after();
  }
  void onInternalResponseTrailers(HeaderMap trailers) override {
    log_.push_back("ir:trailers " + std::string(trailers.get("grpc-status").value_or("-")));
  }
  void onInternalRequestFailed(const upstream::UpstreamFailure& failure) override {
    log_.push_back("ir:failed " + std::string(upstream::failureKindName(failure.kind)));
  }
  void onInternalResponseReset(const upstream::UpstreamFailure* failure) override {
    log_.push_back("ir:reset " + (failure != nullptr
                                      ? std::string(upstream::failureKindName(failure->kind))
                                      : std::string("ferry")));
  }
  ResponseHeadersPtr head;
  std::function<void()> after;  // runs after each head / data callback (e.g. to cancel)

 private:
  testing::Log& log_;
};

class InternalStreamTest : public testing::StreamFixture {
 protected:
  // A client stream whose f0 issues an internal request (`method` `path`, a body follows unless
  // `end_stream`) from its onRequestHeaders and holds the client's request meanwhile. After it,
  // internal_ is the internal request's terminal (not yet given the head: that comes on the next
  // loop turn, turn()).
  void issue(const std::string& method, const std::string& path, bool end_stream) {
    start(1);
    filter(0).on_request_headers = [=, this](RequestHeaders& client_head, bool) {
      if (filter(0).callbacks().internalRequest()) return FilterStatus::Continue;
      auto head = std::make_unique<RequestHeaders>(client_head);
      head->method = method;
      head->path = path;
      handle_ = filter(0).callbacks().startInternalRequest(std::move(head), end_stream, recorder_);
      return FilterStatus::StopAndWait;
    };
    sendRequestHeaders(true, "/client");
    ASSERT_NE(handle_, nullptr);
    internal_ = terminal_factory_->last;
    ASSERT_NE(internal_, terminal_);
    log_.clear();
  }
  // One pass of the loop: what was queued with fireSoon (the internal request's start) runs.
  void turn() {
    auto stop = dispatcher_.createTimer([this] { dispatcher_.exit(); });
    stop->fireSoon();
    dispatcher_.run();
  }
  // The internal request's copy of f0 (every request gets the same filters).
  ScriptedFilter& internalFilter() { return *factories_[0]->created.at(1); }
  UpstreamFailure failure(UpstreamFailure::Kind kind, bool sent) {
    UpstreamFailure f;
    f.kind = kind;
    f.request_bytes_sent = sent;
    f.detail = "scripted";
    return f;
  }
  // What the router does with a failure no filter claims: answers it (upstream_failure_reply).
  void failUpstream(FakeTerminal& terminal, const UpstreamFailure& f) {
    if (!terminal.callbacks().onUpstreamFailure(f)) {
      terminal.callbacks().sendLocalReply(503, "upstream_unavailable", "scripted", {});
    }
  }

  RecordingCallbacks recorder_{log_};
  InternalRequestPtr handle_;
  FakeTerminal* internal_ = nullptr;
};

TEST_F(InternalStreamTest, HeadDataAndEndReachTheCallbacksInOrder) {
  issue("GET", "/v1/stream/s1?live=sse", true);
  EXPECT_EQ(internal_->request_headers_calls, 0) << "starts on the next loop turn, not inside";
  turn();
  EXPECT_THAT(
      log_, ElementsAre("f0:reqh /v1/stream/s1?live=sse end", "T:reqh /v1/stream/s1?live=sse end"));
  log_.clear();
  internal_->respond(200, {{"content-type", "text/event-stream"}}, false);
  internal_->respondData("event: data\n", false);
  internal_->respondData("\n", false);
  internal_->respondData("", true);
  // The internal request's filters see its response first, as for any request.
  EXPECT_THAT(log_, ElementsAre("f0:resh 200", "ir:headers 200", "f0:resb event: data\n",
                                "ir:data event: data\n", "f0:resb \n", "ir:data \n", "f0:resb  end",
                                "ir:data  end"));
  EXPECT_EQ(recorder_.head->headers.get("content-type"), "text/event-stream");
  EXPECT_EQ(encoder_.header_calls, 0) << "nothing of it reaches the issuing stream's client";
  EXPECT_EQ(internal_->resets, 1) << "the upstream is let go at the end, as for any stream";
}

TEST_F(InternalStreamTest, InternalRequestIsTrueOnlyInsideTheInternalRequest) {
  issue("GET", "/inner", true);
  turn();
  EXPECT_FALSE(filter(0).callbacks().internalRequest());
  EXPECT_TRUE(internalFilter().callbacks().internalRequest());
}

TEST_F(InternalStreamTest, ARequestBodyGoesUpstreamInOrder) {
  issue("POST", "/v1/stream/s1", false);
  Buffer first;
  first.add("abc");
  handle_->sendData(first, false);  // before the head went in: waits for it
  turn();
  Buffer second;
  second.add("def");
  handle_->sendData(second, true);
  EXPECT_THAT(log_, ElementsAre("f0:reqh /v1/stream/s1", "T:reqh /v1/stream/s1", "f0:reqb abc",
                                "T:reqb abc", "f0:reqb def end", "T:reqb def end"));
  EXPECT_EQ(internal_->body, "abcdef");
  EXPECT_TRUE(internal_->request_ended);
  internal_->respond(204, {}, true);
  EXPECT_EQ(log_.back(), "ir:headers 204 end");
}

TEST_F(InternalStreamTest, CancelMidResponseReleasesTheUpstreamAndCallsNothingAfter) {
  issue("GET", "/feed", true);
  turn();
  internal_->respond(200, {}, false);
  internal_->respondData("one", false);
  ASSERT_EQ(internal_->resets, 0);
  handle_.reset();
  EXPECT_EQ(internal_->resets, 1) << "the upstream attempt is released";
  EXPECT_EQ(internalFilter().destroyed, 1);
  log_.clear();
  internal_->respondData("two", false);  // a late byte from the upstream
  internal_->respondData("", true);
  EXPECT_TRUE(log_.empty()) << log_.front();
  turn();  // the deferred deletion runs: nothing dangles
}

TEST_F(InternalStreamTest, CancelInsideACallbackStopsTheRest) {
  issue("GET", "/feed", true);
  turn();
  log_.clear();
  recorder_.after = [this] {
    if (log_.back() == "ir:data one") handle_.reset();
  };
  internal_->respond(200, {}, false);
  internal_->respondData("one", false);
  internal_->respondData("two", true);
  EXPECT_THAT(log_, ElementsAre("f0:resh 200", "ir:headers 200", "f0:resb one", "ir:data one"));
  EXPECT_EQ(internal_->resets, 1);
  turn();
}

TEST_F(InternalStreamTest, CancelBeforeItStartedSendsNothing) {
  issue("GET", "/feed", true);
  handle_.reset();
  turn();  // its start would run now; the stream is deleted (internal_ with it)
  EXPECT_TRUE(log_.empty()) << log_.front();  // no "T:reqh": nothing went upstream
}

TEST_F(InternalStreamTest, AFailureBeforeTheHeadIsAFailureNotAResponse) {
  issue("GET", "/feed", true);
  turn();
  log_.clear();
  failUpstream(*internal_, failure(UpstreamFailure::Kind::ConnectFailed, false));
  // The internal request's filters were asked first (f0 did not claim it).
  ASSERT_EQ(internalFilter().failures.size(), 1u);
  EXPECT_THAT(log_, ElementsAre("ir:failed connect_failed"));
  EXPECT_EQ(recorder_.head, nullptr);
}

TEST_F(InternalStreamTest, AFailureAfterTheHeadIsAReset) {
  issue("GET", "/feed", true);
  turn();
  internal_->respond(200, {}, false);
  internal_->respondData("one", false);
  log_.clear();
  failUpstream(*internal_, failure(UpstreamFailure::Kind::Reset, true));
  EXPECT_THAT(log_, ElementsAre("ir:reset reset"));
  internal_->respondData("late", true);
  EXPECT_THAT(log_, ElementsAre("ir:reset reset"));
}

TEST_F(InternalStreamTest, AFailureAFilterAnswersIsThatFiltersResponse) {
  issue("GET", "/feed", true);
  turn();
  internalFilter().on_failure = [this](const UpstreamFailure&) {
    internalFilter().callbacks().sendLocalReply(503, "forward_failed", "scripted", {});
    return true;
  };
  log_.clear();
  failUpstream(*internal_, failure(UpstreamFailure::Kind::ConnectFailed, false));
  ASSERT_GE(log_.size(), 1u);
  EXPECT_EQ(log_.front(), "ir:headers 503");
  EXPECT_THAT(log_.back(), HasSubstr("forward_failed"));
}

TEST_F(InternalStreamTest, TrailersEndTheResponse) {
  issue("GET", "/feed", true);
  turn();
  internal_->respond(200, {}, false);
  HeaderMap trailers;
  trailers.add("grpc-status", "0");
  internal_->callbacks().onUpstreamTrailers(std::move(trailers));
  EXPECT_EQ(log_.back(), "ir:trailers 0");
}

TEST_F(InternalStreamTest, PauseReachesTheRouterAsAClientsWatermarksDo) {
  issue("GET", "/feed", true);
  handle_->pause(true);  // before it started: the router takes it for the attempt it starts
  turn();
  internal_->respond(200, {}, false);
  handle_->pause(true);  // no change
  EXPECT_THAT(internal_->response_pauses, ElementsAre(true));
  EXPECT_EQ(
      ferry::testing::statOf(store_, "ferry_watermark_pauses_total", {{"paused", "upstream_read"}}),
      1);
  handle_->pause(false);
  EXPECT_THAT(internal_->response_pauses, ElementsAre(true, false));
  EXPECT_TRUE(terminal_->response_pauses.empty()) << "the issuing stream's router is not paused";
}

TEST_F(InternalStreamTest, TheIssuingStreamEndingEndsItSilently) {
  issue("GET", "/feed", true);
  turn();
  internal_->respond(200, {}, false);
  log_.clear();
  stream_->onDownstreamReset();  // the client left
  EXPECT_EQ(internal_->resets, 1);
  EXPECT_EQ(internalFilter().destroyed, 1);
  EXPECT_TRUE(log_.empty()) << log_.front();
  handle_->pause(true);  // the handle outlives it harmlessly
  handle_.reset();
  EXPECT_TRUE(internal_->response_pauses.empty());
  turn();
}

TEST_F(InternalStreamTest, TheIssuingStreamAnsweringEndsItSilently) {
  issue("GET", "/feed", true);
  turn();
  internal_->respond(200, {}, false);
  log_.clear();
  // E.g. a drain's 503 to a long-poll (ActiveStream::endLiveFeed), or any local reply.
  filter(0).callbacks().sendLocalReply(503, "draining", "scripted", {});
  EXPECT_EQ(internal_->resets, 1);
  EXPECT_EQ(internalFilter().destroyed, 1);
  EXPECT_THAT(log_, ElementsAre("client:headers 503", ::testing::StartsWith("client:data")));
  internal_->respondData("late", true);
  EXPECT_EQ(log_.size(), 2u);
  turn();
}

TEST_F(InternalStreamTest, ItsIdIsTheIssuingIdWithACountAndItsForwardedFieldsTheIssuers) {
  issue("GET", "/one", true);
  InternalRequestPtr second = filter(0).callbacks().startInternalRequest(
      std::make_unique<RequestHeaders>(), true, recorder_);
  turn();
  const HeaderMap& client = filter(0).callbacks().requestHeaders().headers;
  const std::string client_id(client.get(kRequestIdHeader).value());
  const HeaderMap& inner = internalFilter().callbacks().requestHeaders().headers;
  EXPECT_EQ(inner.get(kRequestIdHeader), client_id + "-r1");
  EXPECT_EQ(inner.count(kRequestIdHeader), 1u);
  EXPECT_EQ(
      factories_[0]->created.at(2)->callbacks().requestHeaders().headers.get(kRequestIdHeader),
      client_id + "-r2");
  EXPECT_EQ(inner.get("x-forwarded-for"), client.get("x-forwarded-for"));
  EXPECT_EQ(inner.count("x-forwarded-for"), 1u);
  EXPECT_EQ(inner.get("x-forwarded-proto"), client.get("x-forwarded-proto"));
}

TEST_F(InternalStreamTest, AnIssuersRequestOutlivesTheStreamItCameFrom) {
  start(1);
  InternalRequestIssuerPtr issuer;
  InternalRequestPtr held;
  filter(0).on_request_headers = [&, this](RequestHeaders& client_head, bool) {
    if (filter(0).callbacks().internalRequest()) return FilterStatus::Continue;
    issuer = filter(0).callbacks().newInternalRequestIssuer();
    held = issuer->start(std::make_unique<RequestHeaders>(client_head), true, recorder_);
    return FilterStatus::StopAndWait;
  };
  sendRequestHeaders(true, "/feed");
  ASSERT_NE(issuer, nullptr);
  FakeTerminal* inner = terminal_factory_->last;
  turn();
  const std::string client_id(
      filter(0).callbacks().requestHeaders().headers.get(kRequestIdHeader).value());
  EXPECT_EQ(internalFilter().callbacks().requestHeaders().headers.get(kRequestIdHeader),
            client_id + "-r1");
  inner->respond(200, {}, false);
  stream_->onDownstreamReset();  // the client it came from left
  EXPECT_EQ(inner->resets, 0) << "an issuer's request does not end with the stream";
  EXPECT_EQ(filter(0).callbacks().newInternalRequestIssuer(), nullptr)
      << "an ended stream gives no issuer";
  log_.clear();
  inner->respondData("more", false);
  EXPECT_THAT(log_, ElementsAre("f0:resb more", "ir:data more"));
  log_.clear();
  issuer.reset();  // cancels what it started
  EXPECT_EQ(inner->resets, 1);
  EXPECT_TRUE(log_.empty()) << log_.front();
  held.reset();  // the handle outlives it harmlessly
  turn();
}

TEST(InternalRequestIdTest, ALongIssuingIdIsShortenedToFit) {
  EXPECT_EQ(internalRequestId("abc", 7), "abc-r7");
  const std::string long_id(kMaxRequestIdBytes, 'x');
  const std::string id = internalRequestId(long_id, 12);
  EXPECT_EQ(id.size(), kMaxRequestIdBytes);
  EXPECT_TRUE(isValidRequestId(id));
  EXPECT_EQ(id.substr(id.size() - 4), "-r12");
}

TEST_F(InternalStreamTest, TheAccessLogRecordsItAsAnyRequest) {
  char path[] = "/tmp/ferry-internal-log-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  auto log = access_log::AccessLog::open(path);
  ASSERT_TRUE(log.isOk());
  config_.access_log = *log;
  issue("GET", "/v1/stream/s1?live=sse", true);
  turn();
  internal_->respond(200, {}, false);
  internal_->respondData("hello", true);
  const std::string client_id(
      filter(0).callbacks().requestHeaders().headers.get(kRequestIdHeader).value());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  EXPECT_THAT(text.str(), HasSubstr("\"path\":\"/v1/stream/s1?live=sse\""));
  EXPECT_THAT(text.str(), HasSubstr("\"request_id\":\"" + client_id + "-r1\""));
  EXPECT_THAT(text.str(), HasSubstr("\"status\":200"));
  EXPECT_THAT(text.str(), HasSubstr("\"bytes_out\":5"));
  EXPECT_THAT(text.str(), HasSubstr("\"end\":\"ok\""));
}

}  // namespace
}  // namespace ferry::http
