#include "proxy/upstream/worker_upstreams.h"

#include "proxy/upstream/http1_conn_pool.h"
#include "proxy/upstream/http2_conn_pool.h"

namespace ferry::upstream {

WorkerUpstreams::WorkerUpstreams(event::Dispatcher& dispatcher, const PoolSettings& settings,
                                 UpstreamStats& stats)
    : factory_([&dispatcher, settings, &stats](const UpstreamTarget& target) {
        return makePool(dispatcher, target, settings, stats);
      }) {}

std::unique_ptr<ConnectionPool> WorkerUpstreams::makePool(event::Dispatcher& dispatcher,
                                                          const UpstreamTarget& target,
                                                          const PoolSettings& settings,
                                                          UpstreamStats& stats) {
  // The local instance (Streams) speaks HTTP/1.1 only, whatever owners speak.
  if (target == settings.local) {
    return std::make_unique<Http1ConnPool>(dispatcher, target, settings, stats);
  }
  const bool https = target.scheme == "https";
  const OwnerProtocol protocol = settings.owner_protocol;
  // https + auto: ALPN decides (the h2 pool falls back to HTTP/1.1 per target); https + h2, or
  // http + h2 (h2c with prior knowledge): HTTP/2 only.
  if (protocol == OwnerProtocol::H2 || (https && protocol == OwnerProtocol::Auto)) {
    return std::make_unique<Http2ConnPool>(dispatcher, target, settings, stats,
                                           protocol == OwnerProtocol::Auto);
  }
  Http1PoolOptions options;
  if (https) options.alpn = {"http/1.1"};
  options.connections_gauge = &stats.owner_connections_active_http1;
  return std::make_unique<Http1ConnPool>(dispatcher, target, settings, stats, options);
}

WorkerUpstreams::~WorkerUpstreams() = default;

ConnectionPool& WorkerUpstreams::pool(const UpstreamTarget& target) {
  for (auto& p : pools_) {
    if (p->target() == target) return *p;
  }
  pools_.push_back(factory_(target));
  return *pools_.back();
}

event::WorkerSlot<WorkerUpstreams> WorkerUpstreams::allocateSlot(event::WorkerSlots& slots,
                                                                 const PoolSettings& settings,
                                                                 UpstreamStats& stats) {
  return slots.allocate<WorkerUpstreams>([&settings, &stats](event::WorkerContext& worker) {
    return std::make_unique<WorkerUpstreams>(worker.dispatcher(), settings, stats);
  });
}

}  // namespace ferry::upstream
