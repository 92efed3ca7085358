#include "proxy/event/dispatcher.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

namespace ferry::event {

namespace {
timeval toTimeval(Millis delay) {
  timeval tv;
  tv.tv_sec = static_cast<long>(delay.count() / 1000);
  tv.tv_usec = static_cast<long>((delay.count() % 1000) * 1000);
  return tv;
}
}  // namespace

Timer::Timer(event_base* base, std::function<void()> callback) : callback_(std::move(callback)) {
  evtimer_assign(&ev_, base, &Timer::onFire, this);
}

Timer::~Timer() { event_del(&ev_); }

void Timer::schedule(Millis delay, Clock::time_point deadline) {
  timeval tv = toTimeval(delay);
  evtimer_add(&ev_, &tv);
  event_pending_ = true;
  wake_up_ = deadline;
}

void Timer::enable(Millis delay) {
  armed_ = true;
  deadline_ = Clock::now() + delay;
  if (event_pending_ && wake_up_ <= deadline_) return;  // onFire() waits for the rest
  schedule(delay, deadline_);
}

void Timer::fireSoon() {
  armed_ = true;
  deadline_ = Clock::time_point::min();
  event_active(&ev_, EV_TIMEOUT, 0);
  event_pending_ = true;
  wake_up_ = deadline_;
}

void Timer::disable() { armed_ = false; }

void Timer::onFire(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<Timer*>(arg);
  // A one-shot event is no longer pending once it runs, whether it timed out or was activated.
  self->event_pending_ = false;
  if (!self->armed_) return;
  if (self->deadline_ != Clock::time_point::min()) {
    const Clock::time_point now = Clock::now();
    if (now < self->deadline_) {
      // Woken for an earlier deadline, or by libevent's coarser clock a little early.
      self->schedule(std::chrono::ceil<Millis>(self->deadline_ - now), self->deadline_);
      return;
    }
  }
  self->armed_ = false;
  self->callback_();
}

Dispatcher::Dispatcher() {
  // The base is only ever touched from its own thread, so it needs no lock (libevent's locks
  // cost a mutex pair on every event add/delete). Other threads wake it through an eventfd.
  event_config* config = event_config_new();
  event_config_set_flag(config, EVENT_BASE_FLAG_NOLOCK);
  base_ = event_base_new_with_config(config);
  event_config_free(config);
  post_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  post_event_ = event_new(base_, post_fd_, EV_READ | EV_PERSIST, &Dispatcher::onPosted, this);
  event_add(post_event_, nullptr);
  deferred_event_ = event_new(base_, -1, 0, &Dispatcher::onDeferredDelete, this);
  write_batch_event_ = event_new(base_, -1, 0, &Dispatcher::onWriteBatch, this);
}

Dispatcher::~Dispatcher() {
  clearDeferred();
  spare_timers_.clear();  // their events are in base_
  event_free(post_event_);
  event_free(deferred_event_);
  event_free(write_batch_event_);
  event_base_free(base_);
  ::close(post_fd_);
}

TimerPtr Dispatcher::createTimer(std::function<void()> callback) {
  return std::make_unique<Timer>(base_, std::move(callback));
}

TimerLease Dispatcher::leaseTimer(std::function<void()> callback) {
  if (spare_timers_.empty()) {
    return TimerLease(new Timer(base_, std::move(callback)), TimerReturn{this});
  }
  Timer* timer = spare_timers_.back().release();
  spare_timers_.pop_back();
  timer->callback_ = std::move(callback);
  return TimerLease(timer, TimerReturn{this});
}

void TimerReturn::operator()(Timer* timer) const { dispatcher->returnTimer(timer); }

void Dispatcher::returnTimer(Timer* timer) {
  std::unique_ptr<Timer> owned(timer);
  if (spare_timers_.size() >= kMaxSpareTimers) return;  // deleted: its event with it
  owned->disable();
  owned->callback_ = nullptr;  // what it captured may be gone before the event wakes up
  spare_timers_.push_back(std::move(owned));
}

void Dispatcher::post(std::function<void()> callback) {
  bool wake;
  {
    std::lock_guard<std::mutex> guard(post_lock_);
    wake = posted_.empty();  // one wake-up per batch
    posted_.push_back(std::move(callback));
  }
  if (wake) {
    uint64_t one = 1;
    ssize_t written = ::write(post_fd_, &one, sizeof(one));
    (void)written;  // a full counter still wakes the loop
  }
}

void Dispatcher::deferredDelete(std::unique_ptr<DeferredDeletable> object) {
  deferred_.push_back(std::move(object));
  if (deferred_.size() == 1) {
    deferred_armed_ = true;
    event_active(deferred_event_, 0, 0);
  }
}

void Dispatcher::cancelFlush(Flushable& flushable) {
  for (auto*& queued : flush_queue_) {
    if (queued == &flushable) queued = nullptr;
  }
}

bool Dispatcher::queueFlush(Flushable& flushable) {
  if (read_callback_depth_ == 0) return false;
  flush_queue_.push_back(&flushable);
  return true;
}

void Dispatcher::enterReadCallback() {
  // What earlier callbacks of this loop pass deferred is off every stack by now (each callback
  // returned to libevent): delete it before this read rather than after the whole pass. With
  // many sockets ready at once, a pass would otherwise free one stream's objects per socket
  // in one go, more blocks of each size than malloc's per-thread cache keeps (7), and the
  // rest would travel through its slower shared bins and back for the next requests.
  if (read_callback_depth_ == 0 && !deferred_.empty()) clearDeferred();
  ++read_callback_depth_;
}

void Dispatcher::leaveReadCallback() {
  if (read_callback_depth_ > 1) {
    --read_callback_depth_;
    return;
  }
  // Still "inside" throughout: a flush that fails closes its connection, and what that
  // produces on other connections is queued here too. The writes of this callback leave at
  // once when no other callback is left in this pass (no other socket's write could join
  // them), else with the rest of the pass. What their results cause (a stream told its
  // client's buffer drained, an HTTP/2 codec writing again) queues flushes, which the next
  // round runs: none is left queued when this returns.
  for (int round = 0;; ++round) {
    runQueuedFlushes();
    if (write_batch_.empty() || write_batch_armed_ || round == kMaxEarlyWriteRounds ||
        !lastCallbackOfPass()) {
      break;
    }
    write_batch_.submit();
  }
  if (!write_batch_.empty()) armWriteBatch();
  read_callback_depth_ = 0;
}

void Dispatcher::runQueuedFlushes() {
  // By index, since the queue may grow meanwhile.
  for (size_t i = 0; i < flush_queue_.size(); ++i) {
    Flushable* next = flush_queue_[i];
    if (next != nullptr) {
      flush_queue_[i] = nullptr;
      next->flushNow();
    }
  }
  flush_queue_.clear();
}

bool Dispatcher::lastCallbackOfPass() const {
  // libevent takes an event off its active queue before calling it: what is counted is still
  // to run. The deferred deletions write nothing.
  int waiting = event_base_get_num_events(base_, EVENT_BASE_COUNT_ACTIVE);
  if (deferred_armed_) --waiting;
  return waiting <= 0;
}

void Dispatcher::queueBatchedWrite(BatchedWriter& writer) {
  write_batch_.queue(writer);
  // Inside a read callback, leaveReadCallback() sends or schedules the batch.
  if (read_callback_depth_ == 0) armWriteBatch();
}

void Dispatcher::armWriteBatch() {
  if (!write_batch_armed_) {
    write_batch_armed_ = true;
    event_active(write_batch_event_, 0, 0);
  }
}

void Dispatcher::onWriteBatch(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<Dispatcher*>(arg);
  self->write_batch_armed_ = false;
  self->write_batch_.submit();
}

void Dispatcher::run() {
  event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY);
  runPosted();
  clearDeferred();
}

void Dispatcher::exit() { event_base_loopexit(base_, nullptr); }

void Dispatcher::onPosted(evutil_socket_t fd, short, void* arg) {
  uint64_t count;
  ssize_t got = ::read(fd, &count, sizeof(count));
  (void)got;
  static_cast<Dispatcher*>(arg)->runPosted();
}

void Dispatcher::runPosted() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> guard(post_lock_);
    batch.swap(posted_);
  }
  for (auto& callback : batch) callback();
}

void Dispatcher::onDeferredDelete(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<Dispatcher*>(arg);
  self->deferred_armed_ = false;
  self->clearDeferred();
}

void Dispatcher::clearDeferred() {
  // Destructors may defer more deletions; loop until none are left.
  // The two vectors swap roles, so neither gives its storage back between passes.
  while (!deferred_.empty()) {
    deleting_.swap(deferred_);
    deleting_.clear();
  }
}

}  // namespace ferry::event
