#pragma once
// A worker's HTTP/1.1 keep-alive pool to one upstream target (the local instance, or one
// owner). A stream takes an idle connection (newest first), or a new one up to the cap, or
// waits in a bounded queue. Idle connections close after `idle_timeout` (set below the
// upstream's own keep-alive timeout, so that ferry, not the upstream, closes idle connections
// in most races). A failed connect (refused, timed out, TLS refused) fails every stream
// waiting at that moment, not only one: a waiter queued behind the cap has no attempt of its
// own. A stream whose reused connection turns out closed is sent again on a fresh one, inside
// the pool (Http1PoolStream). Owned by the worker's WorkerUpstreams; lives as long as the
// worker.

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/upstream/conn_pool.h"
#include "proxy/upstream/conn_pool_base.h"
#include "proxy/upstream/http1_client.h"
#include "proxy/upstream/http1_pool_stream.h"
#include "proxy/upstream/pool_streams.h"
#include "proxy/upstream/upstream_stats.h"
#include "proxy/upstream/upstream_target.h"

namespace ferry::upstream {

// What differs between the local instance's pool and an owner's.
struct Http1PoolOptions {
  std::vector<std::string> alpn;              // https: offered by ALPN (empty: no ALPN)
  stats::Gauge* connections_gauge = nullptr;  // counts its open connections (owners)
};

class Http1ConnPool : public ConnPoolBase {
 public:
  Http1ConnPool(event::Dispatcher& dispatcher, UpstreamTarget target, const PoolSettings& settings,
                UpstreamStats& stats, Http1PoolOptions options = {});
  ~Http1ConnPool() override;

  // ConnectionPool
  UpstreamStream* newStream(http::ResponseDecoder& decoder, UpstreamStreamCallbacks& callbacks,
                            const RequestSource& source) override;
  const UpstreamTarget& target() const override { return target_; }

  // Takes a connection another pool opened and found to speak HTTP/1.1 (the HTTP/2 pool, when
  // the owner chose http/1.1 by ALPN): it serves a waiter or goes idle, as a new one would.
  // Its connect and TLS handshake were counted by that pool.
  void adopt(net::ConnectionPtr connected);

 private:
  friend class Http1Client;
  friend class Http1PoolStream;
  // Gives `stream` a connection now (an idle one, unless `fresh_only`), or queues it, or
  // fails it (overflow). Returns true while it waits.
  bool request(Http1PoolStream& stream, bool fresh_only);
  // Called by Http1PoolStream: ConnPoolBase::destroyStream.
  void connectNew();
  // A client for `connection` with its timer, in clients_.
  Http1Client& addClient(net::ConnectionPtr connection);
  // Called by Http1Client.
  void onClientConnected(Http1Client& client);
  void onClientConnectFailed(Http1Client& client, UpstreamFailure::Kind kind);
  // Fails every stream waiting when a connect failed (see the .cc for why).
  void failPending(UpstreamFailure::Kind kind, const std::string& detail);
  void onClientIdle(Http1Client& client);
  void onClientClosed(Http1Client& client);
  void assign(Http1Client& client);
  void removeIdle(Http1Client& client);
  void destroy(Http1Client& client);

  UpstreamTarget target_;
  PoolSettings settings_;
  UpstreamStats& stats_;
  Http1PoolOptions options_;
  std::list<std::unique_ptr<Http1Client>> clients_;
  std::deque<Http1Client*> idle_;  // back = most recently used
  size_t connecting_ = 0;
};

}  // namespace ferry::upstream
