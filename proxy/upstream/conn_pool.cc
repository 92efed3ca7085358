#include "proxy/upstream/conn_pool.h"

#include <algorithm>

namespace ferry::upstream {

using Kind = http::UpstreamFailure::Kind;

ConnectionPool::ConnectionPool(event::Dispatcher& dispatcher, http::UpstreamTarget target,
                               const PoolSettings& settings, stats::ProxyStats& stats)
    : dispatcher_(dispatcher), target_(std::move(target)), settings_(settings), stats_(stats) {}

ConnectionPool::~ConnectionPool() {
  pending_.clear();
  idle_.clear();
  clients_.clear();
}

uint64_t ConnectionPool::newStream(PoolCallbacks& callbacks, bool fresh_only) {
  if (target_.scheme != "http" && (target_.scheme != "https" || settings_.tls == nullptr)) {
    callbacks.onPoolFailure(Kind::Unsupported, target_.scheme + " upstreams are not configured");
    return 0;
  }
  if (!fresh_only && !idle_.empty()) {
    UpstreamClient* client = idle_.back();
    idle_.pop_back();
    stats_.upstream_reuses.inc();
    callbacks.onPoolReady(*client);
    return 0;
  }
  if (pending_.size() >= settings_.max_pending) {
    stats_.upstream_overflow.inc();
    callbacks.onPoolFailure(Kind::Overflow, "too many requests waiting for an upstream connection");
    return 0;
  }
  uint64_t handle = next_handle_++;
  pending_.push_back({handle, &callbacks, fresh_only});
  // One connection per waiting request, up to the cap; an idle one that frees up serves too.
  if (connecting_ < pending_.size()) {
    if (clients_.size() < settings_.max_connections) {
      connectNew();
    } else if (!idle_.empty()) {
      // At the cap with idle connections and a fresh-only waiter: replace the oldest idle one.
      UpstreamClient* oldest = idle_.front();
      removeIdle(*oldest);
      oldest->connection().close(net::CloseMode::NoFlush);
      connectNew();
    }
  }
  return handle;
}

void ConnectionPool::cancel(uint64_t handle) {
  auto it = std::find_if(pending_.begin(), pending_.end(),
                         [handle](const Pending& p) { return p.handle == handle; });
  if (it != pending_.end()) pending_.erase(it);
}

void ConnectionPool::connectNew() {
  ++connecting_;
  stats_.upstream_connects.inc();
  auto connection =
      target_.scheme == "https"
          ? net::Connection::connectTls(dispatcher_, target_.host, target_.port, *settings_.tls->current(),
                                        target_.server_name)
          : net::Connection::connect(dispatcher_, target_.host, target_.port);
  auto client = std::make_unique<UpstreamClient>(*this, std::move(connection),
                                                 settings_.high_watermark);
  UpstreamClient* raw = client.get();
  raw->timer_ = dispatcher_.createTimer([this, raw] {
    if (!raw->connected_) {
      stats_.upstream_connect_timeouts.inc();
      raw->closed_ = true;
      onClientConnectFailed(*raw, Kind::ConnectTimeout);
    } else {
      // Idle too long.
      removeIdle(*raw);
      raw->connection().close(net::CloseMode::NoFlush);
    }
  });
  raw->timer_->enable(settings_.connect_timeout);
  clients_.push_back(std::move(client));
}

void ConnectionPool::onClientConnected(UpstreamClient& client) {
  --connecting_;
  if (target_.scheme == "https") {
    stats_.upstream_tls_handshakes.inc();
    if (client.connection().tlsResumed()) stats_.upstream_tls_resumptions.inc();
  }
  client.timer_->disable();
  assign(client);
}

void ConnectionPool::assign(UpstreamClient& client) {
  if (pending_.empty()) {
    idle_.push_back(&client);
    client.timer_->enable(settings_.idle_timeout);
    return;
  }
  Pending next = pending_.front();
  pending_.pop_front();
  next.callbacks->onPoolReady(client);
}

void ConnectionPool::onClientConnectFailed(UpstreamClient& client, Kind kind) {
  --connecting_;
  if (kind == Kind::ConnectFailed) stats_.upstream_connect_failures.inc();
  if (kind == Kind::TlsHandshakeFailed) stats_.upstream_tls_handshake_failures.inc();
  std::string detail = kind == Kind::ConnectTimeout ? "upstream connect timed out"
                       : kind == Kind::TlsHandshakeFailed
                           ? "upstream TLS handshake failed: " + client.connection().tlsError()
                           : "upstream refused the connection";
  destroy(client);
  failPending(kind, detail);
}

void ConnectionPool::failPending(Kind kind, const std::string& detail) {
  // A failed connect fails every waiter, as Envoy's pool purges its pending streams on a
  // connect failure: the upstream just refused (or ignored) us, and a waiter queued behind the
  // connection cap has no attempt of its own, so it would otherwise wait for a connection
  // that may never come (until stream_idle, then a wrong 504). Each caller decides what a
  // refusal means (an owner: the local 409; the local instance: 503 with Retry-After). Only
  // the waiters queued before this failure are failed: a callback may queue a new request,
  // which gets its own attempt.
  const uint64_t boundary = next_handle_;
  while (!pending_.empty() && pending_.front().handle < boundary) {
    Pending next = pending_.front();
    pending_.pop_front();
    stats_.upstream_pending_failures.inc();
    next.callbacks->onPoolFailure(kind, detail);
  }
}

void ConnectionPool::onClientIdle(UpstreamClient& client) { assign(client); }

void ConnectionPool::onClientClosed(UpstreamClient& client) {
  if (!client.connected_) {
    // Closed while connecting (connect timeout path closed it): already accounted for.
    destroy(client);
    return;
  }
  removeIdle(client);
  destroy(client);
  // A waiter may now get a new connection under the cap.
  if (connecting_ < pending_.size() && clients_.size() < settings_.max_connections) connectNew();
}

void ConnectionPool::removeIdle(UpstreamClient& client) {
  auto it = std::find(idle_.begin(), idle_.end(), &client);
  if (it != idle_.end()) idle_.erase(it);
}

void ConnectionPool::destroy(UpstreamClient& client) {
  client.timer_->disable();
  for (auto it = clients_.begin(); it != clients_.end(); ++it) {
    if (it->get() == &client) {
      // Unlink first: closing raises LocalClose, which comes back here and must find nothing.
      std::unique_ptr<UpstreamClient> owned = std::move(*it);
      clients_.erase(it);
      if (owned->connection().open()) owned->connection().close(net::CloseMode::NoFlush);
      dispatcher_.deferredDelete(std::move(owned));
      return;
    }
  }
}

}  // namespace ferry::upstream
