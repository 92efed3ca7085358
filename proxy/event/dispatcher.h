#pragma once
// One event loop (a libevent event_base) per thread. Every worker owns one Dispatcher; all of a
// worker's connections, streams, timers and pools run on it and are never touched from another
// thread. Other threads reach a dispatcher only through post(). Timers and events are not
// thread-safe: create, arm and free them on the dispatcher's thread.

#include <event2/event.h>
#include <event2/event_struct.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "proxy/event/write_batch.h"

namespace ferry::event {

using Millis = std::chrono::milliseconds;

class Dispatcher;

// A one-shot timer. Owned by whoever created it; destroying it cancels it.
class Timer {
 public:
  Timer(event_base* base, std::function<void()> callback);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // (Re)arms the timer to fire once after `delay`. A zero delay fires on the next loop turn.
  void enable(Millis delay);
  // Runs the callback later in this loop pass, after the callbacks already queued (no timer
  // heap, no wait for the next epoll round): "as soon as the current call stack unwinds".
  void fireSoon();
  void disable();
  bool enabled() const { return armed_; }

 private:
  friend class Dispatcher;  // re-binds the callback of a timer it lends again (leaseTimer)
  using Clock = std::chrono::steady_clock;
  static void onFire(evutil_socket_t, short, void* arg);
  // Asks libevent to wake us up after `delay` (at `deadline`).
  void schedule(Millis delay, Clock::time_point deadline);

  // Held in the Timer (event_assign), not allocated apart: streams make a timer or two per
  // request, and each event_new was a malloc and a free more (as Envoy's timers, which embed
  // theirs too).
  ::event ev_;
  std::function<void()> callback_;
  // Idle timers are disarmed and re-armed for every request, and each libevent add or delete
  // costs far more than a clock read. So disable() only disarms, leaving libevent's event in
  // place, and enable() reuses a pending event that wakes up no later than the new deadline; a
  // wake-up before the deadline schedules the rest, one while disarmed is ignored.
  bool armed_ = false;  // the callback is due at deadline_
  Clock::time_point deadline_;
  bool event_pending_ = false;  // libevent will call onFire (timeout added, or activated)
  Clock::time_point wake_up_;   // when, at the latest, while event_pending_
};
using TimerPtr = std::unique_ptr<Timer>;

// Gives a leased timer back to the dispatcher that lent it (Dispatcher::leaseTimer).
struct TimerReturn {
  Dispatcher* dispatcher = nullptr;
  void operator()(Timer* timer) const;
};
using TimerLease = std::unique_ptr<Timer, TimerReturn>;

// Objects whose deletion must wait until the current callback stack unwinds (a connection that
// closes from inside its own read callback, a finished stream).
class DeferredDeletable {
 public:
  virtual ~DeferredDeletable() = default;
};

// Something with work to finish once the I/O callback that produced it returns: buffered
// output to write (a Connection, an HTTP/2 codec), an upstream HTTP/1 client to give back to
// its pool. See Dispatcher::queueFlush.
class Flushable {
 public:
  virtual void flushNow() = 0;

 protected:
  ~Flushable() = default;
};

class Dispatcher {
 public:
  Dispatcher();
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  event_base* base() const { return base_; }
  TimerPtr createTimer(std::function<void()> callback);
  // A timer for something made and ended for every request (a stream's idle timer, the
  // router's response-head timer). Destroying a Timer whose libevent event is pending costs an
  // event_del and arming a new one an event_add, on every request; a leased timer instead goes
  // back to this dispatcher's spares with its event still pending, and the next lease re-arms
  // it without libevent whenever that event wakes up no later than the new deadline (Timer
  // keeps such an event and schedules the rest when it fires; a spare's wake-up is ignored).
  // The lease hands the timer back when destroyed, which must happen before the dispatcher
  // goes (as for any Timer: its event belongs to this dispatcher's base).
  TimerLease leaseTimer(std::function<void()> callback);
  // Thread-safe: runs `callback` on this dispatcher's thread on a later loop turn.
  void post(std::function<void()> callback);
  // Deletes `object` once the current callback has returned: at the start of the next read
  // callback, or at the end of this loop pass, whichever comes first. So `object` must be
  // detached already (connections closed, upstream work reset, filters destroyed): its
  // destructor may run just after another connection's read() and must not touch live
  // connections. Every caller today defers only what it has closed or finished.
  void deferredDelete(std::unique_ptr<DeferredDeletable> object);
  // Without the write batch (below), output produced while a socket's read callback runs is
  // written when that callback returns, not at the end of the loop pass: when N sockets are
  // ready at once, as when one event fans out to N live feeds, client k must not wait for the
  // other N-k reads' system calls. With it, plain sockets' output leaves at the end of the pass
  // in one system call for all of them (the other reads cost user time only). A read callback
  // brackets its work with enter/leaveReadCallback; leaving runs the queued flushes.
  // Entering the outermost read callback also deletes what earlier callbacks deferred.
  void enterReadCallback();
  void leaveReadCallback();
  // Queues `flushable` for the end of the current read callback; false outside one (the caller
  // then writes at the end of the loop pass). The caller queues each Flushable at most once
  // until it is flushed, and cancels it before destroying it.
  bool queueFlush(Flushable& flushable);
  void cancelFlush(Flushable& flushable);
  // Writes to sockets batched over a loop pass (WriteBatch): a writer queued here writes at
  // the end of this pass, with every other socket's write of the pass, in one system call.
  // Queued during a read callback, the writes leave when the outermost callback ends if no
  // other callback is left to run in the pass (one ready socket: nothing could join them).
  // batchesWrites() is false when io_uring is not available or batching was switched off;
  // writers then write themselves. Each writer is queued at most once until told its result,
  // and cancelled before it is destroyed.
  bool batchesWrites() const { return batched_writes_ && write_batch_.available(); }
  void setBatchedWrites(bool enabled) { batched_writes_ = enabled; }
  void queueBatchedWrite(BatchedWriter& writer);
  void cancelBatchedWrite(BatchedWriter& writer) { write_batch_.cancel(writer); }
  const WriteBatch& writeBatch() const { return write_batch_; }
  // Runs until exit() is called (from this thread or through post()).
  void run();
  void exit();

 private:
  static void onPosted(evutil_socket_t, short, void* arg);
  static void onDeferredDelete(evutil_socket_t, short, void* arg);
  static void onWriteBatch(evutil_socket_t, short, void* arg);
  void armWriteBatch();
  void runQueuedFlushes();
  // leaveReadCallback()'s rounds of early writes and the flushes their results queue; past
  // them the batch waits for the end of the pass.
  static constexpr int kMaxEarlyWriteRounds = 4;
  // True when libevent has no callback left to run in this loop pass (but deferred deletion).
  bool lastCallbackOfPass() const;
  void runPosted();
  void clearDeferred();
  friend struct TimerReturn;
  void returnTimer(Timer* timer);

  event_base* base_;
  int post_fd_;  // eventfd: other threads' post() wakes the loop through it
  ::event* post_event_;
  ::event* deferred_event_;
  bool deferred_armed_ = false;  // deferred_event_ activated and not run yet
  std::mutex post_lock_;
  std::vector<std::function<void()>> posted_;
  std::vector<std::unique_ptr<DeferredDeletable>> deferred_;
  std::vector<std::unique_ptr<DeferredDeletable>> deleting_;  // clearDeferred()'s batch
  int read_callback_depth_ = 0;
  std::vector<Flushable*> flush_queue_;  // nullptr: cancelled
  WriteBatch write_batch_;
  bool batched_writes_ = true;  // setBatchedWrites (config `batched_writes`)
  // Active while writes are queued: activated during a pass, it runs after every callback
  // libevent found ready for that pass (it goes to the end of the active queue).
  ::event* write_batch_event_;
  bool write_batch_armed_ = false;
  // Leased timers given back, disarmed (their events may still be pending); at most
  // kMaxSpareTimers, so a burst of streams leaves no more than that behind.
  static constexpr size_t kMaxSpareTimers = 1024;
  std::vector<std::unique_ptr<Timer>> spare_timers_;
};

}  // namespace ferry::event
