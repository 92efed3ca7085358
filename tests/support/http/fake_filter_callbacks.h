#pragma once
// The stream as a filter under test sees it (http::StreamFilterCallbacks, proxy/http/filter.h)
// and, for the terminal filter, as the router sees it (http::TerminalFilterCallbacks): one
// recording fake for the filters' unit tests, so that no test implements the interface itself.
//
// What it records (public members, read them in assertions):
// - continueRequest() / continueResponse(): counted;
// - sendLocalReply(): each reply (status, code, message, extra headers) in `local_replies`;
//   sendUpstreamFailureReply(): each failure in `failure_replies`, then `failure_policy` if set
//   (the terminal filter's policy, e.g. filters/router/upstream_failure_reply.h);
// - replay(): each route in `replays`; answers `replay_accepted`;
// - sendResponseHeaders() / sendResponseData(), the filter as the response's source: the head
//   (responseHead()), `heads`, `body` and `ended`. Misuse (a second head, data before the head
//   or after the end) fails the test and is refused, as the stream refuses it;
// - startInternalRequest(), and start() on an issuer from newInternalRequestIssuer() (counted in
//   `issuers`): one IssuedRequest each (issued(), last()), which is how a test drives it:
//   answer through its `callbacks`, see `cancelled` (the filter destroyed the handle, or the
//   issuer that started it) and `paused`;
// - the terminal filter's calls (onUpstream*, pauseRequestBody): `upstream_statuses`,
//   `upstream_body`, `upstream_failures`, `request_body_pauses`.
// What it answers, set before the filter runs: `request` (requestHeaders()), `local`
// (localTarget()), `replayable`, `internal` (internalRequest()), `info` (streamInfo(), also read
// afterwards), `replay_body` (copyReplayBody()), `claim_upstream_failures`.
//
// The dispatcher is real: the fake's own, or the test's (the constructor's argument).
// runUntil() runs it until a condition on what was recorded holds, checked after each call the
// filter makes, or a time limit passes (a filter's timers fire meanwhile).
//
// A call the filter under test must never make (it issues no internal request, say): forbid()
// makes it fail the test, with the reason given. Anything else a test needs (continueRequest()
// driving a real chain) it overrides in a subclass.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/access_log/stream_info.h"
#include "proxy/buffer/buffer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/filter.h"
#include "proxy/http/header_map.h"
#include "proxy/http/internal_request.h"
#include "proxy/http/terminal_filter.h"

namespace ferry::testing {

// One internal request a filter started, as the test sees it. The filter holds the handle;
// this record outlives it.
struct IssuedRequest {
  http::RequestHeaders head;
  bool end_stream = false;  // the head ended the request (no body)
  std::string body;         // bytes the filter sent through the handle's sendData()
  bool body_ended = false;
  // Where the test answers: onInternalResponseHeaders, ...Data, ...RequestFailed, ...Reset.
  http::InternalResponseCallbacks* callbacks = nullptr;
  bool cancelled = false;       // the filter destroyed the handle, or its issuer
  bool paused = false;          // the last pause() the filter asked for
  bool through_issuer = false;  // started by an InternalRequestIssuer
};

class FakeFilterCallbacks : public http::TerminalFilterCallbacks {
 public:
  struct LocalReply {
    int status;
    std::string code;
    std::string message;
    http::HeaderMap extra;
  };
  // Calls forbid() can make fail the test.
  enum class Call {
    Replay,                // replay()
    UpstreamFailureReply,  // sendUpstreamFailureReply()
    InternalRequest,       // startInternalRequest(), newInternalRequestIssuer()
    InternalRequestBody,   // an internal request with a body (end_stream false, sendData())
  };

  // Runs on a dispatcher of its own.
  FakeFilterCallbacks();
  // Runs on the test's `dispatcher`, which must outlive it.
  explicit FakeFilterCallbacks(event::Dispatcher& dispatcher);
  ~FakeFilterCallbacks() override;

  // ---- Driving it ----
  // From now on `call` fails the test, saying `why`; the call is refused (false, nullptr).
  void forbid(Call call, std::string why);
  // Forgets what was recorded and the request; keeps the rest of the set-up (answers, forbid()).
  void reset();
  // Runs the dispatcher until `done()` holds (checked now and after each call the filter makes)
  // or `limit` has passed; returns done().
  bool runUntil(std::function<bool()> done, event::Millis limit);
  // runUntil() the filter starts its next internal request; false when none came in `limit`.
  bool runUntilNextRequest(event::Millis limit = event::Millis(5000));
  // The internal requests started so far, and the last one (fails the test when there is none).
  size_t issued() const { return issued_.size(); }
  IssuedRequest& last();
  // The response head the filter sent (sendResponseHeaders); fails the test when none went out
  // and returns an empty head.
  const http::ResponseHeaders& responseHead() const;

  // ---- What it answers ----
  http::RequestHeaders request;
  upstream::UpstreamTarget local{"local", "http", "127.0.0.1", 8080, ""};
  bool replayable = true;
  bool replay_accepted = true;
  bool internal = false;  // this stream is an internal request's
  access_log::StreamInfo info;
  std::function<void(const upstream::UpstreamFailure&)> failure_policy;  // unset: recorded only
  std::string replay_body;               // what copyReplayBody() adds
  bool claim_upstream_failures = false;  // onUpstreamFailure()'s answer: a filter claimed it

  // ---- What it recorded ----
  int continue_requests = 0;
  int continue_responses = 0;
  std::vector<LocalReply> local_replies;
  std::vector<upstream::UpstreamFailure> failure_replies;  // sendUpstreamFailureReply() calls
  std::vector<http::UpstreamRoute> replays;
  int issuers = 0;                     // newInternalRequestIssuer() calls answered
  int heads = 0;                       // response heads taken (at most one)
  std::string body;                    // response body taken
  bool ended = false;                  // the response ended
  std::vector<int> upstream_statuses;  // onUpstreamHeaders() (1xx heads are not recorded)
  std::string upstream_body;           // onUpstreamData(), drained
  std::vector<upstream::UpstreamFailure> upstream_failures;
  std::vector<bool> request_body_pauses;  // pauseRequestBody()

  // ---- http::StreamFilterCallbacks ----
  event::Dispatcher& dispatcher() override { return dispatcher_; }
  const http::RequestHeaders& requestHeaders() const override { return request; }
  void continueRequest() override;
  void continueResponse() override;
  void sendLocalReply(int status, std::string_view code, std::string_view message,
                      const http::HeaderMap& extra) override;
  void sendUpstreamFailureReply(const upstream::UpstreamFailure& failure) override;
  bool requestReplayable() const override { return replayable; }
  const upstream::UpstreamTarget& localTarget() const override { return local; }
  bool replay(const http::UpstreamRoute& route) override;
  access_log::StreamInfo& streamInfo() override { return info; }
  bool sendResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) override;
  bool sendResponseData(Buffer& data, bool end_stream) override;
  http::InternalRequestPtr startInternalRequest(
      http::RequestHeadersPtr head, bool end_stream,
      http::InternalResponseCallbacks& callbacks) override;
  // An issuer whose requests are recorded as above; it must not outlive this fake.
  http::InternalRequestIssuerPtr newInternalRequestIssuer() override;
  bool internalRequest() const override { return internal; }

  // ---- http::TerminalFilterCallbacks ----
  void onUpstreamInformational(http::ResponseHeadersPtr) override {}
  void onUpstreamHeaders(http::ResponseHeadersPtr headers, bool end_stream) override;
  void onUpstreamData(Buffer& data, bool end_stream) override;
  bool onUpstreamFailure(const upstream::UpstreamFailure& failure) override;
  void pauseRequestBody(bool pause) override;
  bool copyReplayBody(Buffer& out) const override;

 private:
  // False (and the test failed) when `call` is forbidden.
  bool allowed(Call call) const;
  // After each recorded call: ends a runUntil() whose condition now holds.
  void recorded();
  // Records an internal request; returns the filter's handle on it and the record.
  std::pair<http::InternalRequestPtr, std::shared_ptr<IssuedRequest>> issue(
      http::RequestHeadersPtr head, bool end_stream, http::InternalResponseCallbacks& callbacks,
      bool through_issuer);
  class Issuer;

  std::unique_ptr<event::Dispatcher> own_dispatcher_;
  event::Dispatcher& dispatcher_;
  std::map<Call, std::string> forbidden_;
  std::function<bool()> until_;  // runUntil()'s condition while it runs
  http::ResponseHeadersPtr response_head_;
  std::vector<std::shared_ptr<IssuedRequest>> issued_;
};

}  // namespace ferry::testing
