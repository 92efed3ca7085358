#include "filters/live_feeds/live_feeds_filter.h"

#include "filters/live_feeds/live_feeds_log.h"
#include "filters/live_feeds/resume_target.h"

namespace ferry::filters {
namespace {

bool isEventStream(const http::ResponseHeaders& headers) {
  if (headers.status != 200) return false;
  auto type = headers.headers.get("content-type");
  return type && type->substr(0, 17) == "text/event-stream";
}

// A resumed read answered this way may be answered otherwise a moment later (the shard moves,
// the owner restarts, the peer table catches up); anything else will not change.
bool worthRetrying(int status) {
  return status == 409 || status == 429 || status == 502 || status == 503 || status == 504;
}

}  // namespace

http::FilterStatus LiveFeedsFilter::onRequestHeaders(http::RequestHeaders& headers,
                                                     bool end_stream) {
  // Reads only: a GET with no body (never an append or any other method).
  if (callbacks_->internalRequest() || !end_stream || headers.method != "GET" ||
      !config_.is_sse_feed || !config_.is_sse_feed(headers)) {
    mode_ = Mode::Done;  // not ours: the request goes its normal way
    return http::FilterStatus::Continue;
  }
  request_ = std::make_unique<http::RequestHeaders>(headers);
  startAttempt();
  return http::FilterStatus::StopAndWait;
}

void LiveFeedsFilter::startAttempt() {
  auto head = std::make_unique<http::RequestHeaders>(*request_);
  // Before any frame went out, the request is sent again as it was (for offset=now that is
  // what a direct read sent at this moment gives).
  if (framer_.delivered()) head->path = resumeTarget(request_->path, *framer_.delivered());
  head->headers.remove("x-request-id");  // the internal request's own is derived from ours
  attempt_ = callbacks_->startInternalRequest(std::move(head), true, *this);
  if (attempt_ && paused_) attempt_->pause(true);
}

void LiveFeedsFilter::onInternalResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) {
  if (resuming_) {
    if (end_stream || !isEventStream(*headers)) {
      attempt_.reset();
      auto retry_after = headers->headers.get("retry-after");
      if (!worthRetrying(headers->status)) {
        endFeed();
        return;
      }
      onFeedBroken("", retry_after ? *retry_after : std::string_view());
      return;
    }
    schedule_.onRunning();  // the feed runs again; its head is not the client's
    return;
  }
  headers->headers.remove("x-request-id");  // the client gets its own request's id
  mode_ = isEventStream(*headers) && !end_stream ? Mode::Feed : Mode::PassThrough;
  if (end_stream) mode_ = Mode::Done;
  callbacks_->sendResponseHeaders(std::move(headers), end_stream);
}

void LiveFeedsFilter::onInternalResponseData(Buffer& data, bool end_stream) {
  if (mode_ == Mode::PassThrough) {
    if (end_stream) mode_ = Mode::Done;
    callbacks_->sendResponseData(data, end_stream);
    return;
  }
  if (mode_ != Mode::Feed) return;
  const std::string bytes = data.toString();
  data.drain(data.length());
  config_.stats->event_bytes_received.inc(bytes.size());
  std::string whole;
  const Status status = framer_.push(bytes, whole);
  deliver(whole);
  if (!status.isOk() || framer_.closed()) {
    // The stream's own end, or a feed whose position is unknown (it cannot be resumed).
    endFeed();
    return;
  }
  if (end_stream) onFeedBroken("ended");
}

void LiveFeedsFilter::deliver(std::string_view bytes) {
  if (bytes.empty()) return;
  config_.stats->event_bytes_delivered.inc(bytes.size());
  Buffer out;
  out.add(bytes);
  callbacks_->sendResponseData(out, false);
}

void LiveFeedsFilter::onInternalRequestFailed(const upstream::UpstreamFailure& failure) {
  if (mode_ == Mode::Waiting) {
    // The first attempt: the client gets what it would get without this filter.
    attempt_.reset();
    mode_ = Mode::Done;
    callbacks_->sendUpstreamFailureReply(failure);
    return;
  }
  if (mode_ == Mode::Feed) onFeedBroken(upstream::failureKindName(failure.kind));
}

void LiveFeedsFilter::onInternalResponseReset(const upstream::UpstreamFailure* failure) {
  if (mode_ == Mode::PassThrough) {
    attempt_.reset();
    mode_ = Mode::Done;
    // A response that was cut stays cut (a local reply once the response started cuts it).
    callbacks_->sendLocalReply(502, "upstream_reset", "the upstream cut its response", {});
    return;
  }
  if (mode_ == Mode::Feed) {
    onFeedBroken(failure != nullptr ? upstream::failureKindName(failure->kind) : "cut");
  }
}

void LiveFeedsFilter::onFeedBroken(std::string_view cause, std::string_view retry_after) {
  attempt_.reset();
  framer_.dropHeld();
  const bool new_break = !schedule_.broken();
  auto delay = schedule_.nextDelay(std::chrono::steady_clock::now(), retry_after);
  if (!delay) {
    config_.stats->resume_failures.inc();
    endFeed();
    return;
  }
  if (new_break) {
    config_.stats->resumed(cause);
    recordFeedResumes(callbacks_->streamInfo(), ++resumes_);
  }
  resuming_ = true;
  if (!resume_timer_)
    resume_timer_ = callbacks_->dispatcher().createTimer([this] { startAttempt(); });
  resume_timer_->enable(*delay);
}

void LiveFeedsFilter::endFeed() {
  attempt_.reset();
  if (resume_timer_) resume_timer_->disable();
  if (mode_ == Mode::Done) return;
  mode_ = Mode::Done;
  Buffer none;
  callbacks_->sendResponseData(none, true);
}

void LiveFeedsFilter::onResponseWatermark(bool above) {
  paused_ = above;
  if (attempt_) attempt_->pause(above);
}

bool LiveFeedsFilter::onEndLiveFeed() {
  if (mode_ != Mode::Feed) return false;
  endFeed();
  return true;
}

void LiveFeedsFilter::onDestroy() {
  attempt_.reset();
  resume_timer_.reset();
  mode_ = Mode::Done;
}

}  // namespace ferry::filters
