#pragma once
// A worker's HTTP/1.1 keep-alive pool to one upstream target (the local instance, or one
// owner). Requests take an idle connection (newest first), or a new one up to the cap, or wait
// in a bounded queue. Idle connections close after `idle_timeout` (set below the upstream's own
// keep-alive timeout, so that ferry, not the upstream, closes idle connections in most races).
// A failed connect (refused, timed out, TLS refused) fails every request waiting at that
// moment, not only one: a waiter queued behind the cap has no attempt of its own.
// Owned by the worker's WorkerUpstreams; lives as long as the worker.

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>

#include "proxy/event/dispatcher.h"
#include "proxy/http/filter.h"
#include "proxy/stats/proxy_stats.h"
#include "proxy/tls/client_context.h"
#include "proxy/upstream/upstream_client.h"

namespace ferry::upstream {

struct PoolSettings {
  uint32_t max_connections = 256;
  uint32_t max_pending = 1024;
  event::Millis connect_timeout{2000};
  event::Millis idle_timeout{4000};
  size_t high_watermark = 1024 * 1024;
  // Client TLS for https targets (shared by every worker, swapped on SIGHUP); null: https
  // targets are Unsupported.
  std::shared_ptr<tls::ClientContextSlot> tls;
};

// Receives the outcome of ConnectionPool::newStream().
class PoolCallbacks {
 public:
  virtual ~PoolCallbacks() = default;
  // A connected client is ready; the callee starts its request on it now.
  virtual void onPoolReady(UpstreamClient& client) = 0;
  // No connection could be had; nothing was sent.
  virtual void onPoolFailure(http::UpstreamFailure::Kind kind, std::string detail) = 0;
};

class ConnectionPool {
 public:
  ConnectionPool(event::Dispatcher& dispatcher, http::UpstreamTarget target,
                 const PoolSettings& settings, stats::ProxyStats& stats);
  ~ConnectionPool();

  // Asks for a connection. May call back before returning (an idle connection was ready).
  // `fresh_only` skips idle connections (the retry after a stale keep-alive connection).
  // Returns a handle while the request waits (pass it to cancel()), else 0.
  uint64_t newStream(PoolCallbacks& callbacks, bool fresh_only = false);
  void cancel(uint64_t handle);
  const http::UpstreamTarget& target() const { return target_; }
  size_t idleCount() const { return idle_.size(); }
  size_t totalCount() const { return clients_.size(); }

 private:
  friend class UpstreamClient;
  struct Pending {
    uint64_t handle;
    PoolCallbacks* callbacks;
    bool fresh_only;
  };
  void connectNew();
  // Called by UpstreamClient.
  void onClientConnected(UpstreamClient& client);
  void onClientConnectFailed(UpstreamClient& client, http::UpstreamFailure::Kind kind);
  // Fails every request waiting when a connect failed (see the .cc for why).
  void failPending(http::UpstreamFailure::Kind kind, const std::string& detail);
  void onClientIdle(UpstreamClient& client);
  void onClientClosed(UpstreamClient& client);
  void assign(UpstreamClient& client);
  void removeIdle(UpstreamClient& client);
  void destroy(UpstreamClient& client);

  event::Dispatcher& dispatcher_;
  http::UpstreamTarget target_;
  PoolSettings settings_;
  stats::ProxyStats& stats_;
  std::list<std::unique_ptr<UpstreamClient>> clients_;
  std::deque<UpstreamClient*> idle_;  // back = most recently used
  std::deque<Pending> pending_;
  size_t connecting_ = 0;
  uint64_t next_handle_ = 1;
};

}  // namespace ferry::upstream
