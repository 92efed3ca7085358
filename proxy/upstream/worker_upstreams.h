#pragma once
// A worker's upstream context: the connection pools of one worker, one per target, made on
// first use.
//
// How it is reached: it is a value in the worker's context (event/worker_context.h). The
// composition root allocates its slot (allocateSlot()) when it builds the router's config; the
// router's factory gets the slot and, for each stream, takes that worker's pools from the
// context the stream hands it (createTerminalFilter(worker)). ConnectionManager and
// ActiveStream carry only the generic context, so http/ knows nothing of the pools. A test
// builds a context (or gives RouterFilter a WorkerUpstreams directly).

#include <functional>
#include <list>
#include <memory>

#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
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

  // Config time (main thread): a slot whose value, in each worker's context, is that worker's
  // pools with `settings` and `stats` (both read when the worker first asks; they outlive
  // every worker).
  static event::WorkerSlot<WorkerUpstreams> allocateSlot(event::WorkerSlots& slots,
                                                         const PoolSettings& settings,
                                                         UpstreamStats& stats);

 private:
  PoolFactory factory_;
  std::list<std::unique_ptr<ConnectionPool>> pools_;
};

}  // namespace ferry::upstream
