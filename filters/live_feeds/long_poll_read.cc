#include "filters/live_feeds/long_poll_read.h"

#include <algorithm>

#include "filters/live_feeds/long_poll_target.h"
#include "filters/live_feeds/resume_schedule.h"

namespace ferry::filters {
namespace {
// On every answer of a Streams instance, on none of a proxy's (docs/streams-instance.md).
constexpr std::string_view kInstanceOrigin = "prisma-streams-origin";
}  // namespace

LongPollRead::LongPollRead(const http::RequestHeaders& request, Clock::time_point deadline,
                           Start start, event::Dispatcher& dispatcher, LongPollStats& stats,
                           Sink& sink)
    : request_(request),
      deadline_(deadline),
      start_(std::move(start)),
      dispatcher_(dispatcher),
      stats_(stats),
      sink_(sink) {}

void LongPollRead::start() { sendAttempt(); }

void LongPollRead::sendAttempt() {
  if (cancelled_) return;
  auto head = std::make_unique<http::RequestHeaders>(request_);
  head->headers.remove("x-request-id");  // the internal request's own is derived from ours
  if (resend_) {
    // Only what is left of the client's wait, in whole seconds (0: answer at once).
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline_ - Clock::now());
    head->path = withLongPollTimeout(request_.path,
                                     static_cast<uint64_t>(std::max<int64_t>(left.count(), 0)));
  }
  attempt_ = start_(std::move(head), *this);
  if (attempt_ && paused_) attempt_->pause(true);
}

LongPollRead::Millis LongPollRead::nextBackoff() {
  const Millis delay = backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  return delay;
}

bool LongPollRead::resendAfter(Millis delay, std::string_view cause) {
  if (Clock::now() + delay > deadline_) return false;
  stats_.resent(cause);
  resend_ = true;
  if (!resend_timer_) resend_timer_ = dispatcher_.createTimer([this] { sendAttempt(); });
  resend_timer_->enable(delay);
  return true;
}

void LongPollRead::onInternalResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) {
  if ((headers->status == 502 || headers->status == 504) &&
      !headers->headers.has(kInstanceOrigin)) {
    // A proxy's answer (the owner's ferry): the instance behind it was not reached or died
    // before its head. For a read that is a failure before the head like any other.
    const Millis delay = nextBackoff();
    if (resendAfter(delay, headers->status == 502 ? "bad_gateway" : "gateway_timeout")) {
      attempt_.reset();
      return;
    }
    stats_.resend_failures.inc();
  } else if (headers->status == 503) {
    // The shard moves (shard_moving), or the forward failed (forward_failed): both say when.
    const auto retry_after = headers->headers.get("retry-after");
    const auto delay = retry_after ? ResumeSchedule::parseRetryAfter(*retry_after) : std::nullopt;
    if (delay) {
      // Past the wait the client gets this 503 as it is (it says when to come back).
      if (resendAfter(std::max(*delay, kFirstBackoff), "retry_after")) {
        attempt_.reset();
        return;
      }
      stats_.resend_failures.inc();
    }
  }
  sink_.onAnswerHeaders(std::move(headers), end_stream);
}

void LongPollRead::onInternalResponseData(Buffer& data, bool end_stream) {
  sink_.onAnswerData(data, end_stream);
}

void LongPollRead::onInternalRequestFailed(const upstream::UpstreamFailure& failure) {
  attempt_.reset();
  if (resendAfter(nextBackoff(), upstream::failureKindName(failure.kind))) return;
  stats_.resend_failures.inc();
  sink_.onAnswerFailed(failure);
}

void LongPollRead::onInternalResponseReset(const upstream::UpstreamFailure*) {
  attempt_.reset();
  sink_.onAnswerCut();
}

void LongPollRead::pause(bool paused) {
  paused_ = paused;
  if (attempt_) attempt_->pause(paused);
}

void LongPollRead::cancel() {
  cancelled_ = true;
  attempt_.reset();
  if (resend_timer_) resend_timer_->disable();
}

}  // namespace ferry::filters
