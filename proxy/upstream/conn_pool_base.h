#pragma once
// What the HTTP/1.1 and HTTP/2 pools (http1_conn_pool.h, http2_conn_pool.h) do the same way
// with the streams they hand out: own every stream they made until its user let go or it
// failed, keep the waiting ones in order, and take a stream out (cancel, destroyStream) once,
// the same way for both. What differs (which connection a stream gets, when one opens) stays
// in each pool.
//
// Ownership: the pool owns its streams by unique_ptr, linked through the streams themselves
// (PoolStreamBase::pool_next_), so adding one allocates nothing beyond the stream. A stream
// taken out is deleted deferred: it may be on the stack (its user let go from a callback).

#include <cstdint>
#include <deque>
#include <memory>

#include "proxy/event/dispatcher.h"
#include "proxy/upstream/conn_pool.h"
#include "proxy/upstream/pool_stream_base.h"

namespace ferry::upstream {

class ConnPoolBase : public ConnectionPool {
 public:
  ~ConnPoolBase() override;

 protected:
  explicit ConnPoolBase(event::Dispatcher& dispatcher) : dispatcher_(dispatcher) {}

  // A stream waiting for a connection; `seq` orders them (failPending's boundary).
  struct Pending {
    uint64_t seq;
    PoolStreamBase* stream;
  };

  // Takes `stream` into the pool; it is owned here until destroyStream().
  template <class Stream>
  Stream& addStream(std::unique_ptr<Stream> stream) {
    Stream& added = *stream;
    link(std::move(stream));
    return added;
  }
  // Queues `stream` to wait for a connection.
  void enqueue(PoolStreamBase& stream);
  // Takes the first waiting stream out of the queue.
  PoolStreamBase& dequeue();
  // Takes a waiting stream out of the queue (its user let go, or it failed).
  void cancel(PoolStreamBase& stream);
  // Takes the stream out of the pool (and the queue) and deletes it, deferred.
  void destroyStream(PoolStreamBase& stream);
  // Deletes every stream left (the pool goes with its worker; their users are gone).
  void deleteStreams();

  event::Dispatcher& dispatcher_;
  std::deque<Pending> pending_;
  uint64_t next_seq_ = 1;

 private:
  void link(std::unique_ptr<PoolStreamBase> stream);
  std::unique_ptr<PoolStreamBase> unlink(PoolStreamBase& stream);

  std::unique_ptr<PoolStreamBase> streams_;  // the newest; each owns the next older one

  friend class PoolStreamBase;
};

}  // namespace ferry::upstream
