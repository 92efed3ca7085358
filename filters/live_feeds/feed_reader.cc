#include "filters/live_feeds/feed_reader.h"

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

FeedReader::FeedReader(const FeedReaderConfig& config, http::InternalRequestIssuerPtr issuer,
                       event::Dispatcher& dispatcher, const http::RequestHeaders& request,
                       std::optional<FeedPosition> from, FeedReaderSink& sink)
    : config_(config),
      issuer_(std::move(issuer)),
      dispatcher_(dispatcher),
      request_(std::make_unique<http::RequestHeaders>(request)),
      sink_(&sink),
      mode_(from ? Mode::Feed : Mode::Waiting),
      resuming_(from.has_value()),
      schedule_(config.resume_deadline) {
  if (from) framer_.startAt(std::move(*from));
}

FeedReader::~FeedReader() { stop(); }

void FeedReader::start() { startAttempt(); }

void FeedReader::stop() {
  mode_ = Mode::Done;
  attempt_.reset();
  resume_timer_.reset();
}

void FeedReader::startAttempt() {
  auto head = std::make_unique<http::RequestHeaders>(*request_);
  // Before any frame went out, the request is sent again as it was (for offset=now that is
  // what a direct read sent at this moment gives).
  if (framer_.delivered()) head->path = resumeTarget(request_->path, *framer_.delivered());
  head->headers.remove("x-request-id");  // the internal request's own is derived from ours
  attempt_ = issuer_->start(std::move(head), true, *this);
  if (paused_) attempt_->pause(true);
}

void FeedReader::onInternalResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) {
  if (resuming_) {
    if (end_stream || !isEventStream(*headers)) {
      attempt_.reset();
      if (!worthRetrying(headers->status)) {
        end();
        return;
      }
      auto retry_after = headers->headers.get("retry-after");
      onBroken("", retry_after ? *retry_after : std::string_view());
      return;
    }
    schedule_.onRunning();  // the feed runs again; its head is not the client's
    return;
  }
  headers->headers.remove("x-request-id");  // each client gets its own request's id
  const bool is_feed = isEventStream(*headers) && !end_stream;
  mode_ = is_feed ? Mode::Feed : end_stream ? Mode::Done : Mode::PassThrough;
  resuming_ = is_feed;  // every later attempt continues the feed
  sink_->onFeedHead(std::move(headers), is_feed, end_stream);
}

void FeedReader::onInternalResponseData(Buffer& data, bool end_stream) {
  if (mode_ == Mode::PassThrough) {
    if (end_stream) mode_ = Mode::Done;
    sink_->onPassThroughData(data, end_stream);
    return;
  }
  if (mode_ != Mode::Feed) return;
  const std::string bytes = data.toString();
  data.drain(data.length());
  config_.stats->event_bytes_received.inc(bytes.size());
  std::string whole;
  const Status status = framer_.push(bytes, whole);
  if (!whole.empty()) {
    sink_->onFeedUnits(whole);
    if (mode_ != Mode::Feed) return;  // stopped from the sink
  }
  if (!status.isOk() || framer_.closed()) {
    // The stream's own end, or a feed whose position is unknown (it cannot be resumed).
    end();
    return;
  }
  if (end_stream) onBroken("ended");
}

void FeedReader::onInternalRequestFailed(const upstream::UpstreamFailure& failure) {
  if (mode_ == Mode::Waiting) {
    attempt_.reset();
    mode_ = Mode::Done;
    sink_->onFeedFailed(failure);
    return;
  }
  if (mode_ == Mode::Feed) onBroken(upstream::failureKindName(failure.kind));
}

void FeedReader::onInternalResponseReset(const upstream::UpstreamFailure* failure) {
  if (mode_ == Mode::PassThrough) {
    attempt_.reset();
    mode_ = Mode::Done;
    sink_->onPassThroughCut();
    return;
  }
  if (mode_ == Mode::Feed) {
    onBroken(failure != nullptr ? upstream::failureKindName(failure->kind) : "cut");
  }
}

void FeedReader::onBroken(std::string_view cause, std::string_view retry_after) {
  attempt_.reset();
  framer_.dropHeld();
  const bool new_break = !schedule_.broken();
  std::optional<std::chrono::milliseconds> delay;
  if (config_.resume) delay = schedule_.nextDelay(std::chrono::steady_clock::now(), retry_after);
  if (!delay) {
    if (config_.resume) config_.stats->resume_failures.inc();
    end();
    return;
  }
  if (new_break) {
    config_.stats->resumed(cause);
    sink_->onFeedResuming();
    if (mode_ != Mode::Feed) return;  // stopped from the sink
  }
  if (!resume_timer_) resume_timer_ = dispatcher_.createTimer([this] { startAttempt(); });
  resume_timer_->enable(*delay);
}

void FeedReader::end() {
  stop();
  sink_->onFeedEnd();
}

void FeedReader::pause(bool paused) {
  paused_ = paused;
  if (attempt_) attempt_->pause(paused);
}

}  // namespace ferry::filters
