#pragma once
// A worker's upstream context: the connection pools of one worker, one per target, made on
// first use. The router reaches it without the connection manager or the stream carrying it.
//
// How it is reached: WorkerUpstreams::current(), a thread-local pointer the worker sets on its
// own thread before its loop runs (and a test sets with ScopedCurrent). This is Envoy's
// thread-local slot for its cluster manager, reduced to the one thing ferry keeps per worker.
// Why not a parameter: the pools are the router's business only; passing them through
// ConnectionManager, ActiveStream and TerminalFilterFactory made three layers that never use
// them carry them (and made http/ depend on upstream/). Why not a map keyed by dispatcher:
// the thread already says which worker runs, at the cost of one thread-local read per router.
// A router is created on its worker's thread (a stream is created from that worker's loop),
// so reading current() there always finds its own worker's pools.

#include <functional>
#include <list>
#include <memory>

#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/upstream/conn_pool.h"
#include "proxy/upstream/upstream_stats.h"
#include "proxy/upstream/upstream_target.h"

namespace ferry::upstream {

class WorkerUpstreams {
 public:
  // Makes the pool for a target on its first use.
  using PoolFactory = std::function<std::unique_ptr<ConnectionPool>(const UpstreamTarget&)>;

  // Pools with `settings`, chosen per target by makePool().
  WorkerUpstreams(event::Dispatcher& dispatcher, const PoolSettings& settings,
                  UpstreamStats& stats);
  // The pool for `target`: the local instance (`settings.local`) always HTTP/1.1
  // (Http1ConnPool); an owner as settings.owner_protocol says: Http2ConnPool for https under
  // auto (ALPN [h2, http/1.1], falling back per target) or h2 (ALPN [h2]) and for http under
  // h2 (h2c); Http1ConnPool otherwise, its connections counted as owner connections.
  static std::unique_ptr<ConnectionPool> makePool(event::Dispatcher& dispatcher,
                                                  const UpstreamTarget& target,
                                                  const PoolSettings& settings,
                                                  UpstreamStats& stats);
  // Pools made by `factory` (tests give the router a scripted pool this way).
  explicit WorkerUpstreams(PoolFactory factory) : factory_(std::move(factory)) {}
  ~WorkerUpstreams();
  WorkerUpstreams(const WorkerUpstreams&) = delete;
  WorkerUpstreams& operator=(const WorkerUpstreams&) = delete;

  // The pool for `target`, made on first use; lives as long as this context.
  ConnectionPool& pool(const UpstreamTarget& target);

  // The context of the calling thread. Aborts when none was set: a router created off a
  // worker's thread is a programming error, not a request's failure.
  static WorkerUpstreams& current();

  // Makes `upstreams` the calling thread's context for its lifetime (restores the previous
  // one after). The worker holds one around its loop; tests hold one around their streams.
  class ScopedCurrent {
   public:
    explicit ScopedCurrent(WorkerUpstreams& upstreams);
    ~ScopedCurrent();
    ScopedCurrent(const ScopedCurrent&) = delete;
    ScopedCurrent& operator=(const ScopedCurrent&) = delete;

   private:
    WorkerUpstreams* previous_;
  };

 private:
  PoolFactory factory_;
  std::list<std::unique_ptr<ConnectionPool>> pools_;
};

}  // namespace ferry::upstream
