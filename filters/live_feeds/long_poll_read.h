#pragma once
// One upstream long-poll, sent again while it fails before its response head
// (docs/live-feeds.md, "Long-polls"). A long-poll is a read: sending it again is safe.
//
// The first attempt is the client's request as it came (without its x-request-id: the internal
// request gets its own). An attempt that fails before any head (no instance answered: refused,
// reset, the owner died), is answered `503` with `Retry-After` (the shard moves; a ferry's
// forward_failed or upstream_unavailable) or `502` / `504` from a proxy (no
// `prisma-streams-origin`: the owner's ferry lost its instance) is sent again after the
// Retry-After or a short backoff (100 ms doubling to 1 s), if that leaves the client's
// deadline (when ferry got the request plus the client's `timeout`) not passed; the resend asks the
// instance to wait only for the whole seconds left (`timeout=`, long_poll_target.h; 0: answer now).
// Otherwise the sink gets what the client would get without ferry's resend: the failure (the
// router's answer to it) or that 503 as it is. Any other head is the answer, passed on with its
// body.
//
// Owned by the long-poll filter (its own read) or by a collapsed long-poll (long_poll_hub.h);
// runs on their worker. `start` issues one internal request (the stream's own, or an
// InternalRequestIssuer's). The sink must outlive it; it may cancel() from a callback, but not
// destroy it there.

#include <chrono>
#include <functional>
#include <memory>

#include "filters/live_feeds/long_poll_stats.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/header_map.h"
#include "proxy/http/internal_request.h"

namespace ferry::filters {

class LongPollRead : public http::InternalResponseCallbacks {
 public:
  using Clock = std::chrono::steady_clock;
  using Millis = std::chrono::milliseconds;
  static constexpr Millis kFirstBackoff{100};
  static constexpr Millis kMaxBackoff{1'000};

  // Where the answer goes: a head then body (the answer), or instead a failure past the
  // deadline, or a cut after the head.
  class Sink {
   public:
    virtual ~Sink() = default;
    virtual void onAnswerHeaders(http::ResponseHeadersPtr headers, bool end_stream) = 0;
    virtual void onAnswerData(Buffer& data, bool end_stream) = 0;
    virtual void onAnswerFailed(const upstream::UpstreamFailure& failure) = 0;
    virtual void onAnswerCut() = 0;
  };
  using Start = std::function<http::InternalRequestPtr(http::RequestHeadersPtr head,
                                                       http::InternalResponseCallbacks& callbacks)>;

  LongPollRead(const http::RequestHeaders& request, Clock::time_point deadline, Start start,
               event::Dispatcher& dispatcher, LongPollStats& stats, Sink& sink);

  // Sends the first attempt.
  void start();
  // Backpressure from the client: stops / resumes reading the answer.
  void pause(bool paused);
  // Ends the current attempt and any resend to come; nothing is called after.
  void cancel();

  // http::InternalResponseCallbacks
  void onInternalResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) override;
  void onInternalResponseData(Buffer& data, bool end_stream) override;
  void onInternalRequestFailed(const upstream::UpstreamFailure& failure) override;
  void onInternalResponseReset(const upstream::UpstreamFailure* failure) override;

 private:
  // Sends the next attempt after `delay` if the deadline allows it; false: it does not.
  bool resendAfter(Millis delay, std::string_view cause);
  Millis nextBackoff();
  void sendAttempt();

  const http::RequestHeaders request_;
  const Clock::time_point deadline_;
  const Start start_;
  event::Dispatcher& dispatcher_;
  LongPollStats& stats_;
  Sink& sink_;
  http::InternalRequestPtr attempt_;
  event::TimerPtr resend_timer_;
  Millis backoff_ = kFirstBackoff;
  bool resend_ = false;  // the next attempt is a resend (its timeout is what is left)
  bool cancelled_ = false;
  bool paused_ = false;
};

}  // namespace ferry::filters
