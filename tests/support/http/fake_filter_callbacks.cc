#include "tests/support/http/fake_filter_callbacks.h"

#include <gtest/gtest.h>

#include <optional>
#include <utility>

namespace ferry::testing {
namespace {

// The filter's handle on an IssuedRequest: records what the filter does with it.
class FakeInternalRequest : public http::InternalRequest {
 public:
  FakeInternalRequest(std::shared_ptr<IssuedRequest> issued,
                      std::optional<std::string> body_forbidden)
      : issued_(std::move(issued)), body_forbidden_(std::move(body_forbidden)) {}
  ~FakeInternalRequest() override { issued_->cancelled = true; }

  void sendData(Buffer& data, bool end_stream) override {
    if (body_forbidden_) {
      ADD_FAILURE() << "unexpected internal request body: " << *body_forbidden_;
      return;
    }
    EXPECT_FALSE(issued_->end_stream || issued_->body_ended) << "body after the request's end";
    issued_->body += data.toString();
    data.drain(data.length());
    issued_->body_ended = end_stream;
  }
  void pause(bool paused) override { issued_->paused = paused; }

 private:
  std::shared_ptr<IssuedRequest> issued_;
  std::optional<std::string> body_forbidden_;
};

const char* callName(FakeFilterCallbacks::Call call) {
  switch (call) {
    case FakeFilterCallbacks::Call::Replay:
      return "replay()";
    case FakeFilterCallbacks::Call::UpstreamFailureReply:
      return "sendUpstreamFailureReply()";
    case FakeFilterCallbacks::Call::InternalRequest:
      return "internal request";
    case FakeFilterCallbacks::Call::InternalRequestBody:
      return "internal request body";
  }
  return "?";
}

}  // namespace

FakeFilterCallbacks::FakeFilterCallbacks()
    : own_dispatcher_(std::make_unique<event::Dispatcher>()), dispatcher_(*own_dispatcher_) {}

FakeFilterCallbacks::FakeFilterCallbacks(event::Dispatcher& dispatcher) : dispatcher_(dispatcher) {}

FakeFilterCallbacks::~FakeFilterCallbacks() = default;

void FakeFilterCallbacks::forbid(Call call, std::string why) { forbidden_[call] = std::move(why); }

void FakeFilterCallbacks::reset() {
  request = {};
  info = {};
  continue_requests = continue_responses = 0;
  local_replies.clear();
  failure_replies.clear();
  replays.clear();
  heads = 0;
  body.clear();
  ended = false;
  response_head_.reset();
  upstream_statuses.clear();
  upstream_body.clear();
  upstream_failures.clear();
  request_body_pauses.clear();
  issuers = 0;
  issued_.clear();
}

bool FakeFilterCallbacks::runUntil(std::function<bool()> done, event::Millis limit) {
  if (done()) return true;
  auto give_up = dispatcher_.createTimer([this] { dispatcher_.exit(); });
  give_up->enable(limit);
  until_ = std::move(done);
  dispatcher_.run();
  const bool met = until_();
  until_ = nullptr;
  return met;
}

bool FakeFilterCallbacks::runUntilNextRequest(event::Millis limit) {
  const size_t before = issued_.size();
  return runUntil([this, before] { return issued_.size() > before; }, limit);
}

IssuedRequest& FakeFilterCallbacks::last() {
  if (issued_.empty()) {
    ADD_FAILURE() << "the filter started no internal request";
    static IssuedRequest none;
    none = {};
    return none;
  }
  return *issued_.back();
}

const http::ResponseHeaders& FakeFilterCallbacks::responseHead() const {
  if (!response_head_) {
    ADD_FAILURE() << "the filter sent no response head";
    static const http::ResponseHeaders none;
    return none;
  }
  return *response_head_;
}

bool FakeFilterCallbacks::allowed(Call call) const {
  auto it = forbidden_.find(call);
  if (it == forbidden_.end()) return true;
  ADD_FAILURE() << "unexpected " << callName(call) << ": " << it->second;
  return false;
}

void FakeFilterCallbacks::recorded() {
  if (until_ && until_()) dispatcher_.exit();
}

void FakeFilterCallbacks::continueRequest() {
  ++continue_requests;
  recorded();
}

void FakeFilterCallbacks::continueResponse() {
  ++continue_responses;
  recorded();
}

void FakeFilterCallbacks::sendLocalReply(int status, std::string_view code,
                                         std::string_view message, const http::HeaderMap& extra) {
  local_replies.push_back({status, std::string(code), std::string(message), extra});
  recorded();
}

void FakeFilterCallbacks::sendUpstreamFailureReply(const upstream::UpstreamFailure& failure) {
  if (!allowed(Call::UpstreamFailureReply)) return;
  failure_replies.push_back(failure);
  if (failure_policy) failure_policy(failure);
  recorded();
}

bool FakeFilterCallbacks::replay(const http::UpstreamRoute& route) {
  if (!allowed(Call::Replay)) return false;
  replays.push_back(route);
  recorded();
  return replay_accepted;
}

bool FakeFilterCallbacks::sendResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) {
  if (heads > 0) {
    ADD_FAILURE() << "a second response head";
    return false;
  }
  ++heads;
  response_head_ = std::move(headers);
  ended = end_stream;
  recorded();
  return true;
}

bool FakeFilterCallbacks::sendResponseData(Buffer& data, bool end_stream) {
  if (heads == 0 || ended) {
    ADD_FAILURE() << (heads == 0 ? "response data before the head" : "response data after the end");
    return false;
  }
  body += data.toString();
  data.drain(data.length());
  ended = end_stream;
  recorded();
  return true;
}

http::InternalRequestPtr FakeFilterCallbacks::startInternalRequest(
    http::RequestHeadersPtr head, bool end_stream, http::InternalResponseCallbacks& callbacks) {
  if (!allowed(Call::InternalRequest)) return nullptr;
  return issue(std::move(head), end_stream, callbacks, false).first;
}

// The issuer newInternalRequestIssuer() hands out: its requests are the fake's; destroying it
// cancels those it started (internal_request.h).
class FakeFilterCallbacks::Issuer : public http::InternalRequestIssuer {
 public:
  explicit Issuer(FakeFilterCallbacks& fake) : fake_(fake) {}
  ~Issuer() override {
    for (auto& issued : started_) issued->cancelled = true;
  }
  http::InternalRequestPtr start(http::RequestHeadersPtr head, bool end_stream,
                                 http::InternalResponseCallbacks& callbacks) override {
    auto [handle, issued] = fake_.issue(std::move(head), end_stream, callbacks, true);
    started_.push_back(std::move(issued));
    return std::move(handle);
  }

 private:
  FakeFilterCallbacks& fake_;
  std::vector<std::shared_ptr<IssuedRequest>> started_;
};

http::InternalRequestIssuerPtr FakeFilterCallbacks::newInternalRequestIssuer() {
  if (!allowed(Call::InternalRequest)) return nullptr;
  ++issuers;
  recorded();
  return std::make_unique<Issuer>(*this);
}

std::pair<http::InternalRequestPtr, std::shared_ptr<IssuedRequest>> FakeFilterCallbacks::issue(
    http::RequestHeadersPtr head, bool end_stream, http::InternalResponseCallbacks& callbacks,
    bool through_issuer) {
  std::optional<std::string> body_forbidden;
  if (auto it = forbidden_.find(Call::InternalRequestBody); it != forbidden_.end()) {
    body_forbidden = it->second;
    EXPECT_TRUE(end_stream) << "unexpected internal request body: " << it->second;
  }
  auto issued = std::make_shared<IssuedRequest>();
  issued->head = *head;
  issued->end_stream = end_stream;
  issued->through_issuer = through_issuer;
  issued->callbacks = &callbacks;
  issued_.push_back(issued);
  recorded();
  return {std::make_unique<FakeInternalRequest>(issued, std::move(body_forbidden)), issued};
}

void FakeFilterCallbacks::onUpstreamHeaders(http::ResponseHeadersPtr headers, bool) {
  upstream_statuses.push_back(headers->status);
  recorded();
}

void FakeFilterCallbacks::onUpstreamData(Buffer& data, bool) {
  upstream_body += data.toString();
  data.drain(data.length());
  recorded();
}

bool FakeFilterCallbacks::onUpstreamFailure(const upstream::UpstreamFailure& failure) {
  upstream_failures.push_back(failure);
  recorded();
  return claim_upstream_failures;
}

void FakeFilterCallbacks::pauseRequestBody(bool pause) {
  request_body_pauses.push_back(pause);
  recorded();
}

bool FakeFilterCallbacks::copyReplayBody(Buffer& out) const {
  if (!replayable) return false;
  out.add(replay_body);
  return true;
}

}  // namespace ferry::testing
