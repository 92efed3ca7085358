// Tests tests/support/http/fake_filter_callbacks.cc: what it records and answers, and that it
// fails loudly (a forbidden call, a response the stream would refuse, a lookup of something the
// filter never did) instead of answering with nothing.
#include "tests/support/http/fake_filter_callbacks.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <memory>

namespace ferry::testing {
namespace {

using Call = FakeFilterCallbacks::Call;

class NoResponse : public http::InternalResponseCallbacks {
 public:
  void onInternalResponseHeaders(http::ResponseHeadersPtr, bool) override {}
  void onInternalResponseData(Buffer&, bool) override {}
  void onInternalRequestFailed(const upstream::UpstreamFailure&) override {}
  void onInternalResponseReset(const upstream::UpstreamFailure*) override {}
};

http::ResponseHeadersPtr head(int status) {
  auto h = std::make_unique<http::ResponseHeaders>();
  h->status = status;
  return h;
}

TEST(FakeFilterCallbacksTest, RecordsTheFiltersResponse) {
  FakeFilterCallbacks cb;
  EXPECT_TRUE(cb.sendResponseHeaders(head(200), false));
  Buffer data;
  data.add("abc");
  EXPECT_TRUE(cb.sendResponseData(data, true));
  EXPECT_EQ(data.length(), 0u) << "taken bytes are drained";
  EXPECT_EQ(cb.responseHead().status, 200);
  EXPECT_EQ(cb.heads, 1);
  EXPECT_EQ(cb.body, "abc");
  EXPECT_TRUE(cb.ended);
}

TEST(FakeFilterCallbacksTest, AResponseTheStreamWouldRefuseFailsTheTest) {
  FakeFilterCallbacks cb;
  Buffer data;
  data.add("x");
  bool taken = true;
  EXPECT_NONFATAL_FAILURE(taken = cb.sendResponseData(data, false), "data before the head");
  EXPECT_FALSE(taken);
  EXPECT_EQ(data.length(), 1u) << "refused data is left as it was";
  EXPECT_NONFATAL_FAILURE(cb.responseHead(), "no response head");
  ASSERT_TRUE(cb.sendResponseHeaders(head(200), true));
  EXPECT_NONFATAL_FAILURE(taken = cb.sendResponseHeaders(head(500), false), "a second response");
  EXPECT_FALSE(taken);
  EXPECT_NONFATAL_FAILURE(taken = cb.sendResponseData(data, true), "data after the end");
  EXPECT_FALSE(taken);
  EXPECT_EQ(cb.responseHead().status, 200);
}

TEST(FakeFilterCallbacksTest, AForbiddenCallFailsTheTestWithItsReasonAndIsRefused) {
  FakeFilterCallbacks cb;
  cb.forbid(Call::Replay, "this filter never replays");
  cb.forbid(Call::InternalRequest, "this filter issues none");
  bool accepted = true;
  EXPECT_NONFATAL_FAILURE(accepted = cb.replay({cb.local, {}}), "this filter never replays");
  EXPECT_FALSE(accepted);
  EXPECT_TRUE(cb.replays.empty());
  NoResponse answer;
  http::InternalRequestPtr handle;
  EXPECT_NONFATAL_FAILURE(
      handle = cb.startInternalRequest(std::make_unique<http::RequestHeaders>(), true, answer),
      "this filter issues none");
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(cb.issued(), 0u);
}

TEST(FakeFilterCallbacksTest, AnInternalRequestIsRecordedAndItsHandleDriven) {
  FakeFilterCallbacks cb;
  EXPECT_NONFATAL_FAILURE(cb.last(), "no internal request");
  NoResponse answer;
  auto request = std::make_unique<http::RequestHeaders>();
  request->path = "/v1/stream/s";
  auto handle = cb.startInternalRequest(std::move(request), false, answer);
  ASSERT_NE(handle, nullptr);
  ASSERT_EQ(cb.issued(), 1u);
  EXPECT_EQ(cb.last().head.path, "/v1/stream/s");
  EXPECT_EQ(cb.last().callbacks, &answer);
  Buffer body;
  body.add("b");
  handle->sendData(body, true);
  handle->pause(true);
  EXPECT_EQ(cb.last().body, "b");
  EXPECT_TRUE(cb.last().body_ended);
  EXPECT_TRUE(cb.last().paused);
  EXPECT_FALSE(cb.last().cancelled);
  handle.reset();
  EXPECT_TRUE(cb.last().cancelled);
}

TEST(FakeFilterCallbacksTest, AnIssuersRequestsAreRecordedAndEndWithTheIssuer) {
  FakeFilterCallbacks cb;
  auto issuer = cb.newInternalRequestIssuer();
  ASSERT_NE(issuer, nullptr);
  EXPECT_EQ(cb.issuers, 1);
  NoResponse answer;
  auto handle = issuer->start(std::make_unique<http::RequestHeaders>(), true, answer);
  ASSERT_EQ(cb.issued(), 1u);
  EXPECT_TRUE(cb.last().through_issuer);
  EXPECT_FALSE(cb.last().cancelled);
  issuer.reset();
  EXPECT_TRUE(cb.last().cancelled) << "destroying the issuer cancels what it started";
  cb.forbid(Call::InternalRequest, "this filter issues none");
  EXPECT_NONFATAL_FAILURE(issuer = cb.newInternalRequestIssuer(), "this filter issues none");
  EXPECT_EQ(issuer, nullptr);
}

TEST(FakeFilterCallbacksTest, AForbiddenInternalRequestBodyFailsTheTest) {
  FakeFilterCallbacks cb;
  cb.forbid(Call::InternalRequestBody, "reads have no body");
  NoResponse answer;
  http::InternalRequestPtr handle;
  EXPECT_NONFATAL_FAILURE(
      handle = cb.startInternalRequest(std::make_unique<http::RequestHeaders>(), false, answer),
      "reads have no body");
  Buffer body;
  body.add("b");
  EXPECT_NONFATAL_FAILURE(handle->sendData(body, true), "reads have no body");
  EXPECT_EQ(cb.last().body, "");
}

TEST(FakeFilterCallbacksTest, RunUntilEndsWhenACallMeetsTheConditionOrAtTheLimit) {
  FakeFilterCallbacks cb;
  auto later = cb.dispatcher().createTimer([&cb] { cb.continueRequest(); });
  later->enable(event::Millis(10));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(cb.runUntil([&cb] { return cb.continue_requests == 1; }, event::Millis(10'000)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(cb.runUntil([&cb] { return cb.continue_requests == 2; }, event::Millis(20)));
  EXPECT_FALSE(cb.runUntilNextRequest(event::Millis(20)));
}

TEST(FakeFilterCallbacksTest, ResetForgetsTheRecordButKeepsTheSetUp) {
  FakeFilterCallbacks cb;
  cb.replay_accepted = false;
  cb.forbid(Call::UpstreamFailureReply, "none");
  cb.request.path = "/p";
  cb.continueResponse();
  cb.sendLocalReply(503, "code", "message", {});
  EXPECT_FALSE(cb.replay({cb.local, {}}));
  cb.reset();
  EXPECT_EQ(cb.request.path, "");
  EXPECT_EQ(cb.continue_responses, 0);
  EXPECT_TRUE(cb.local_replies.empty());
  EXPECT_TRUE(cb.replays.empty());
  EXPECT_FALSE(cb.replay({cb.local, {}}));
  EXPECT_NONFATAL_FAILURE(cb.sendUpstreamFailureReply({}), "none");
}

}  // namespace
}  // namespace ferry::testing
