#include "filters/live_feeds/live_feeds_filter.h"

#include "filters/live_feeds/live_feeds_log.h"
#include "filters/live_feeds/live_read.h"
#include "filters/live_feeds/share_key.h"

namespace ferry::filters {

http::FilterStatus LiveFeedsFilter::onRequestHeaders(http::RequestHeaders& headers,
                                                     bool end_stream) {
  // Without is_live_read (a narrower config), the SSE rule alone.
  if (!servesLiveRead(*callbacks_, headers, end_stream,
                      config_.is_live_read ? config_.is_live_read : config_.is_sse_feed)) {
    mode_ = Mode::Done;  // not ours: the request goes its normal way
    return http::FilterStatus::Continue;
  }
  if (!config_.is_sse_feed || !config_.is_sse_feed(headers)) return serveLongPoll(headers, true);
  if (config_.share) {
    hub_ = &worker_.get(config_.hub);
    key_ = shareKey(headers, config_.share_key_headers);
    if (joinAtStart(headers)) return http::FilterStatus::StopAndWait;
  }
  reader_ = std::make_unique<FeedReader>(config_.reader, callbacks_->newInternalRequestIssuer(),
                                         callbacks_->dispatcher(), headers, std::nullopt, *this);
  reader_->start();
  return http::FilterStatus::StopAndWait;
}

http::FilterStatus LiveFeedsFilter::serveLongPoll(http::RequestHeaders& headers, bool end_stream) {
  mode_ = Mode::Done;  // the long-poll filter answers, or the request goes its normal way
  if (!config_.long_polls) return http::FilterStatus::Continue;
  // It asks is_long_poll() itself.
  long_poll_ = std::make_unique<LongPollFilter>(*config_.long_polls, worker_);
  long_poll_->setCallbacks(*callbacks_);
  return long_poll_->onRequestHeaders(headers, end_stream);
}

bool LiveFeedsFilter::joinAtStart(const http::RequestHeaders& headers) {
  SharedFeed* feed = hub_->find(key_);
  if (feed == nullptr || !feed->position()) return false;
  // Where a direct read of this request would start must be where the feed stands: its offset,
  // and its cursor when it names one (a client must never get a cursor below its own).
  const ReadPosition start = readPosition(headers.path);
  const FeedPosition& at = *feed->position();
  if (start.offset != at.next_offset || (start.cursor && *start.cursor != at.cursor)) {
    return false;
  }
  if (!callbacks_->sendResponseHeaders(std::make_unique<http::ResponseHeaders>(*feed->head()),
                                       false)) {
    return false;
  }
  head_ = feed->head();
  written_ = at;
  // It starts as a direct read at that position does: with the control frame that says where
  // it stands and that it is up to date, not only at the next event (on a quiet stream, never).
  write(feed->positionFrame());
  join(*feed);
  return true;
}

void LiveFeedsFilter::join(SharedFeed& feed) {
  mode_ = Mode::Shared;
  feed_ = &feed;
  feed.add(*this);
  recordShared();
}

void LiveFeedsFilter::startOwnRead(std::optional<FeedPosition> from) {
  reader_ = std::make_unique<FeedReader>(config_.reader, callbacks_->newInternalRequestIssuer(),
                                         callbacks_->dispatcher(), callbacks_->requestHeaders(),
                                         std::move(from), *this);
  mode_ = Mode::Own;
  if (paused_) reader_->pause(true);
  reader_->start();
  if (hub_ != nullptr) {
    hub_->addSolo(key_, *this);
    solo_in_hub_ = true;
  }
}

void LiveFeedsFilter::onFeedHead(http::ResponseHeadersPtr head, bool is_feed, bool end_stream) {
  if (!is_feed) {
    mode_ = end_stream ? Mode::Done : Mode::PassThrough;
    callbacks_->sendResponseHeaders(std::move(head), end_stream);
    return;
  }
  if (hub_ != nullptr) head_ = std::make_shared<const http::ResponseHeaders>(*head);
  if (!callbacks_->sendResponseHeaders(std::move(head), false)) {
    onDestroy();  // the client is gone
    return;
  }
  mode_ = Mode::Own;
  if (hub_ == nullptr) return;
  if (hub_->find(key_) == nullptr) {
    share();  // the key's first feed: this read becomes the shared one
    return;
  }
  hub_->addSolo(key_, *this);
  solo_in_hub_ = true;
}

void LiveFeedsFilter::share() {
  leaveFeedAndHub();
  feed_ = &hub_->share(key_, std::move(reader_), head_, *this);
  mode_ = Mode::Shared;
  recordShared();
}

void LiveFeedsFilter::onPassThroughData(Buffer& data, bool end_stream) {
  if (end_stream) mode_ = Mode::Done;
  callbacks_->sendResponseData(data, end_stream);
}

void LiveFeedsFilter::onPassThroughCut() {
  mode_ = Mode::Done;
  sendUpstreamCut(*callbacks_);
}

void LiveFeedsFilter::onFeedFailed(const upstream::UpstreamFailure& failure) {
  // The first attempt: the client gets what it would get without this filter.
  mode_ = Mode::Done;
  callbacks_->sendUpstreamFailureReply(failure);
}

void LiveFeedsFilter::onFeedUnits(std::string_view units) {
  write(units);
  written_ = reader_->position();
  if (mode_ != Mode::Own || hub_ == nullptr) return;
  SharedFeed* feed = hub_->find(key_);
  if (feed == nullptr) {
    // The key's shared feed ended or its clients left: this read becomes it (the reader goes
    // on from inside this call, now for the feed).
    share();
    return;
  }
  if (joinIfAt(*feed)) hub_->removeSolo(key_, *this);
}

bool LiveFeedsFilter::joinIfAt(SharedFeed& feed) {
  if (mode_ != Mode::Own || paused_ || !written_ || !feed.position() ||
      !(*feed.position() == *written_)) {
    return false;
  }
  solo_in_hub_ = false;  // the hub (or onFeedUnits) takes it off its list
  dropReader();
  join(feed);
  return true;
}

void LiveFeedsFilter::onFeedResuming() { recordFeedResumes(callbacks_->streamInfo(), ++resumes_); }

void LiveFeedsFilter::onFeedEnd() {
  dropReader();
  endFeed();
}

void LiveFeedsFilter::onSharedUnits(std::string_view units, const FeedPosition& position) {
  if (!paused_) {
    write(units);
    written_ = position;
    return;
  }
  queue_.append(units);
  queue_end_ = position;
  if (queue_.size() > config_.subscriber_buffer) detach();
}

void LiveFeedsFilter::onSharedResuming() {
  recordFeedResumes(callbacks_->streamInfo(), ++resumes_);
}

void LiveFeedsFilter::onSharedEnd() {
  feed_ = nullptr;  // the feed took it off its list
  flushQueue();
  endFeed();
}

void LiveFeedsFilter::detach() {
  config_.reader.stats->detached_subscribers.inc();
  queue_.clear();
  queue_end_.reset();
  leaveFeedAndHub();
  if (!written_) {
    // Nothing reached the client yet (it joined with the feed's first answer): there is no
    // position to read on from; its response ends, complete, and it reads again itself.
    endFeed();
    return;
  }
  startOwnRead(written_);
}

void LiveFeedsFilter::write(std::string_view units) {
  if (units.empty()) return;
  config_.reader.stats->event_bytes_delivered.inc(units.size());
  Buffer out;
  out.add(units);
  callbacks_->sendResponseData(out, false);
}

void LiveFeedsFilter::flushQueue() {
  if (queue_.empty()) return;
  std::string units = std::move(queue_);
  queue_.clear();
  write(units);
  written_ = queue_end_;
  queue_end_.reset();
}

void LiveFeedsFilter::onResponseWatermark(bool above) {
  if (long_poll_) {
    long_poll_->onResponseWatermark(above);
    return;
  }
  paused_ = above;
  if (reader_) reader_->pause(above);
  if (!above && mode_ == Mode::Shared) flushQueue();
}

void LiveFeedsFilter::leaveFeedAndHub() {
  if (feed_ != nullptr) {
    SharedFeed* feed = feed_;
    feed_ = nullptr;
    feed->remove(*this);
  }
  if (solo_in_hub_) {
    solo_in_hub_ = false;
    hub_->removeSolo(key_, *this);
  }
}

void LiveFeedsFilter::dropReader() {
  if (!reader_) return;
  reader_->stop();
  callbacks_->dispatcher().deferredDelete(std::move(reader_));
}

void LiveFeedsFilter::endFeed() {
  leaveFeedAndHub();
  dropReader();
  if (mode_ == Mode::Done) return;
  mode_ = Mode::Done;
  Buffer none;
  callbacks_->sendResponseData(none, true);
}

bool LiveFeedsFilter::onEndLiveFeed() {
  if (long_poll_) return long_poll_->onEndLiveFeed();
  if (mode_ != Mode::Own && mode_ != Mode::Shared) return false;
  // Units waiting for the client are whole: they go out before the end.
  flushQueue();
  endFeed();
  return true;
}

void LiveFeedsFilter::recordShared() {
  if (shared_) return;
  shared_ = true;
  recordFeedShared(callbacks_->streamInfo());
}

void LiveFeedsFilter::onDestroy() {
  if (long_poll_) long_poll_->onDestroy();
  leaveFeedAndHub();
  dropReader();
  mode_ = Mode::Done;
}

}  // namespace ferry::filters
