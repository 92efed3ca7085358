#include "filters/live_feeds/long_poll_filter.h"

#include "filters/live_feeds/live_read.h"
#include "filters/live_feeds/long_poll_target.h"
#include "filters/live_feeds/share_key.h"

namespace ferry::filters {
namespace {

void appendPart(std::string& key, const std::optional<std::string>& part) {
  if (!part) {
    key += "-;";
    return;
  }
  key += std::to_string(part->size());
  key.push_back(':');
  key += *part;
  key.push_back(';');
}

}  // namespace

std::string longPollKey(const http::RequestHeaders& request,
                        const std::vector<std::string>& share_key_headers) {
  const ReadPosition position = readPosition(request.path);
  // "now" is the tail when the instance sees the read, which differs from one read to the next.
  if (position.offset == "now" || position.cursor == "now") return {};
  std::string key = shareKey(request, share_key_headers);
  key += "|@";
  appendPart(key, position.offset);
  appendPart(key, position.cursor);
  return key;
}

http::FilterStatus LongPollFilter::onRequestHeaders(http::RequestHeaders& headers,
                                                    bool end_stream) {
  if (!servesLiveRead(*callbacks_, headers, end_stream, config_.is_long_poll)) {
    return http::FilterStatus::Continue;
  }
  request_ = std::make_unique<http::RequestHeaders>(headers);
  deadline_ = LongPollRead::Clock::now() + longPollWait(headers.path);
  if (config_.share) {
    const std::string key = longPollKey(headers, config_.share_key_headers);
    LongPollHub& hub = worker_.get(config_.hub);
    if (!key.empty()) {
      if (CollapsedLongPoll* waiting = hub.find(key)) {
        config_.stats->collapsed.inc();
        shared_ = waiting;
        waiting->join(*this);
        return http::FilterStatus::StopAndWait;
      }
      if (http::InternalRequestIssuerPtr issuer = callbacks_->newInternalRequestIssuer()) {
        shared_ = &hub.open(key, std::move(issuer), headers, deadline_, config_.answer_limit,
                            *config_.stats, *this);
        return http::FilterStatus::StopAndWait;
      }
    }
  }
  readAlone();
  return http::FilterStatus::StopAndWait;
}

void LongPollFilter::readAlone() {
  read_ = std::make_unique<LongPollRead>(
      *request_, deadline_,
      [this](http::RequestHeadersPtr head, http::InternalResponseCallbacks& callbacks) {
        return callbacks_->startInternalRequest(std::move(head), true, callbacks);
      },
      callbacks_->dispatcher(), *config_.stats, *this);
  if (paused_) read_->pause(true);
  read_->start();
}

// ---- Its own read ----------------------------------------------------------------------------

void LongPollFilter::onAnswerHeaders(http::ResponseHeadersPtr headers, bool end_stream) {
  headers->headers.remove("x-request-id");  // the client gets its own request's id
  callbacks_->sendResponseHeaders(std::move(headers), end_stream);
}

void LongPollFilter::onAnswerData(Buffer& data, bool end_stream) {
  callbacks_->sendResponseData(data, end_stream);
}

void LongPollFilter::onAnswerFailed(const upstream::UpstreamFailure& failure) {
  callbacks_->sendUpstreamFailureReply(failure);  // what the client gets without this filter
}

void LongPollFilter::onAnswerCut() { sendUpstreamCut(*callbacks_); }

void LongPollFilter::onResponseWatermark(bool above) {
  paused_ = above;
  if (read_) read_->pause(above);
}

// ---- A collapsed long-poll -------------------------------------------------------------------

void LongPollFilter::onSharedAnswer(const http::ResponseHeaders& head, const Buffer& body) {
  shared_ = nullptr;
  auto copy = std::make_unique<http::ResponseHeaders>(head);
  copy->headers.remove("x-request-id");  // the client gets its own request's id
  if (body.empty()) {
    callbacks_->sendResponseHeaders(std::move(copy), true);
    return;
  }
  if (!callbacks_->sendResponseHeaders(std::move(copy), false)) return;
  Buffer mine;
  mine.copyFrom(body);
  callbacks_->sendResponseData(mine, true);
}

void LongPollFilter::onSharedFailure(const upstream::UpstreamFailure& failure) {
  shared_ = nullptr;
  callbacks_->sendUpstreamFailureReply(failure);
}

void LongPollFilter::onSharedDetached() {
  shared_ = nullptr;
  readAlone();
}

void LongPollFilter::onDestroy() {
  if (shared_ != nullptr) shared_->leave(*this);
  shared_ = nullptr;
  if (read_) read_->cancel();  // destroyed with the filter: this may be inside its callback
}

}  // namespace ferry::filters
