#include "filters/live_feeds/long_poll_hub.h"

#include <algorithm>

namespace ferry::filters {

CollapsedLongPoll::CollapsedLongPoll(LongPollHub& hub, std::string key,
                                     http::InternalRequestIssuerPtr issuer,
                                     const http::RequestHeaders& request,
                                     LongPollRead::Clock::time_point deadline,
                                     uint64_t answer_limit, LongPollStats& stats,
                                     event::Dispatcher& dispatcher)
    : hub_(hub),
      key_(std::move(key)),
      answer_limit_(answer_limit),
      stats_(stats),
      issuer_(std::move(issuer)),
      read_(
          request, deadline,
          [this](http::RequestHeadersPtr head, http::InternalResponseCallbacks& callbacks) {
            return issuer_->start(std::move(head), true, callbacks);
          },
          dispatcher, stats, *this) {}

void CollapsedLongPoll::join(LongPollWaiter& waiter) { waiters_.push_back(&waiter); }

void CollapsedLongPoll::leave(LongPollWaiter& waiter) {
  auto it = std::find(waiters_.begin(), waiters_.end(), &waiter);
  if (it == waiters_.end()) return;
  waiters_.erase(it);
  if (waiters_.empty()) finish();  // nobody waits for it: the upstream long-poll ends
}

LongPollWaiter* CollapsedLongPoll::popWaiter() {
  if (waiters_.empty()) return nullptr;
  LongPollWaiter* waiter = waiters_.front();
  waiters_.pop_front();
  return waiter;
}

void CollapsedLongPoll::onAnswerHeaders(http::ResponseHeadersPtr headers, bool end_stream) {
  // An answer came: a long-poll arriving now reads on (and may collapse onto) a new one.
  hub_.unlist(key_, *this);
  head_ = std::move(headers);
  head_end_ = end_stream;
  if (end_stream) deliver();
}

void CollapsedLongPoll::onAnswerData(Buffer& data, bool end_stream) {
  if (finished_) return;
  body_.move(data);
  if (body_.length() > answer_limit_) {
    detachAll();
    return;
  }
  if (end_stream) deliver();
}

void CollapsedLongPoll::deliver() {
  // A waiter's client may leave while another is written to (one connection's error ends its
  // other streams): each is taken off the list before it is told.
  while (LongPollWaiter* waiter = popWaiter()) waiter->onSharedAnswer(*head_, body_);
  finish();
}

void CollapsedLongPoll::onAnswerFailed(const upstream::UpstreamFailure& failure) {
  hub_.unlist(key_, *this);
  while (LongPollWaiter* waiter = popWaiter()) waiter->onSharedFailure(failure);
  finish();
}

void CollapsedLongPoll::onAnswerCut() { detachAll(); }

void CollapsedLongPoll::detachAll() {
  hub_.unlist(key_, *this);
  while (LongPollWaiter* waiter = popWaiter()) {
    stats_.detached.inc();
    waiter->onSharedDetached();
  }
  finish();
}

void CollapsedLongPoll::finish() {
  if (finished_) return;
  finished_ = true;
  read_.cancel();  // not destroyed here: this may be inside its callback
  body_.clear();
  hub_.unlist(key_, *this);
  hub_.release(*this);
}

LongPollHub::~LongPollHub() {
  joinable_.clear();
  entries_.clear();
}

CollapsedLongPoll* LongPollHub::find(const std::string& key) {
  auto it = joinable_.find(key);
  return it == joinable_.end() ? nullptr : it->second;
}

CollapsedLongPoll& LongPollHub::open(const std::string& key, http::InternalRequestIssuerPtr issuer,
                                     const http::RequestHeaders& request,
                                     LongPollRead::Clock::time_point deadline,
                                     uint64_t answer_limit, LongPollStats& stats,
                                     LongPollWaiter& first) {
  auto entry = std::make_unique<CollapsedLongPoll>(*this, key, std::move(issuer), request, deadline,
                                                   answer_limit, stats, dispatcher_);
  CollapsedLongPoll& ref = *entry;
  entries_.emplace(&ref, std::move(entry));
  joinable_[key] = &ref;
  ref.join(first);
  ref.start();
  return ref;
}

void LongPollHub::unlist(const std::string& key, CollapsedLongPoll& entry) {
  auto it = joinable_.find(key);
  if (it != joinable_.end() && it->second == &entry) joinable_.erase(it);
}

void LongPollHub::release(CollapsedLongPoll& entry) {
  auto it = entries_.find(&entry);
  if (it == entries_.end()) return;
  std::unique_ptr<CollapsedLongPoll> owned = std::move(it->second);
  entries_.erase(it);
  dispatcher_.deferredDelete(std::move(owned));
}

}  // namespace ferry::filters
