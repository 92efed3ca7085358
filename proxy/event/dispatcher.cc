#include "proxy/event/dispatcher.h"

#include <event2/thread.h>

#include <utility>

namespace ferry::event {

namespace {
// libevent needs its locking callbacks installed before the first event_base is made, so that
// event_active() from another thread (post()) is safe.
void initLibeventThreads() {
  static std::once_flag once;
  std::call_once(once, [] { evthread_use_pthreads(); });
}

timeval toTimeval(Millis delay) {
  timeval tv;
  tv.tv_sec = static_cast<long>(delay.count() / 1000);
  tv.tv_usec = static_cast<long>((delay.count() % 1000) * 1000);
  return tv;
}
}  // namespace

Timer::Timer(event_base* base, std::function<void()> callback)
    : ev_(evtimer_new(base, &Timer::onFire, this)), callback_(std::move(callback)) {}

Timer::~Timer() { event_free(ev_); }

void Timer::enable(Millis delay) {
  timeval tv = toTimeval(delay);
  evtimer_add(ev_, &tv);
}

void Timer::fireSoon() { event_active(ev_, EV_TIMEOUT, 0); }

void Timer::disable() { evtimer_del(ev_); }

bool Timer::enabled() const { return evtimer_pending(ev_, nullptr) != 0; }

void Timer::onFire(evutil_socket_t, short, void* arg) { static_cast<Timer*>(arg)->callback_(); }

Dispatcher::Dispatcher() {
  initLibeventThreads();
  base_ = event_base_new();
  post_event_ = event_new(base_, -1, 0, &Dispatcher::onPosted, this);
  deferred_event_ = event_new(base_, -1, 0, &Dispatcher::onDeferredDelete, this);
}

Dispatcher::~Dispatcher() {
  clearDeferred();
  event_free(post_event_);
  event_free(deferred_event_);
  event_base_free(base_);
}

TimerPtr Dispatcher::createTimer(std::function<void()> callback) {
  return std::make_unique<Timer>(base_, std::move(callback));
}

void Dispatcher::post(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> guard(post_lock_);
    posted_.push_back(std::move(callback));
  }
  event_active(post_event_, 0, 0);
}

void Dispatcher::deferredDelete(std::unique_ptr<DeferredDeletable> object) {
  deferred_.push_back(std::move(object));
  if (deferred_.size() == 1) event_active(deferred_event_, 0, 0);
}

void Dispatcher::run() {
  event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY);
  runPosted();
  clearDeferred();
}

void Dispatcher::exit() { event_base_loopexit(base_, nullptr); }

void Dispatcher::onPosted(evutil_socket_t, short, void* arg) {
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
  static_cast<Dispatcher*>(arg)->clearDeferred();
}

void Dispatcher::clearDeferred() {
  // Destructors may defer more deletions; loop until none are left.
  while (!deferred_.empty()) {
    std::vector<std::unique_ptr<DeferredDeletable>> batch;
    batch.swap(deferred_);
    batch.clear();
  }
}

}  // namespace ferry::event
