#include "proxy/upstream/http1_conn_pool.h"

#include <algorithm>

namespace ferry::upstream {

using Kind = UpstreamFailure::Kind;

Http1ConnPool::Http1ConnPool(event::Dispatcher& dispatcher, UpstreamTarget target,
                             const PoolSettings& settings, UpstreamStats& stats,
                             Http1PoolOptions options)
    : ConnPoolBase(dispatcher),
      target_(std::move(target)),
      settings_(settings),
      stats_(stats),
      options_(std::move(options)) {}

Http1ConnPool::~Http1ConnPool() {
  pending_.clear();
  idle_.clear();
  clients_.clear();
  deleteStreams();
}

UpstreamStream* Http1ConnPool::newStream(http::ResponseDecoder& decoder,
                                         UpstreamStreamCallbacks& callbacks,
                                         const RequestSource& source) {
  if (refuseUnsupportedScheme(target_, settings_, callbacks)) return nullptr;
  Http1PoolStream& stream =
      addStream(std::make_unique<Http1PoolStream>(*this, decoder, callbacks, source));
  return request(stream, false) ? &stream : nullptr;
}

bool Http1ConnPool::request(Http1PoolStream& stream, bool fresh_only) {
  if (!fresh_only && !idle_.empty()) {
    Http1Client* client = idle_.back();
    idle_.pop_back();
    stats_.upstream_reuses.inc();
    stream.onConnectionReady(*client);
    return false;
  }
  if (pending_.size() >= settings_.max_pending) {
    stats_.upstream_overflow.inc();
    stream.onConnectFailed(overflowFailure("too many requests waiting for an upstream connection"));
    return false;
  }
  enqueue(stream);
  // One connection per waiting stream, up to the cap; an idle one that frees up serves too.
  if (connecting_ < pending_.size()) {
    if (clients_.size() < settings_.max_connections) {
      connectNew();
    } else if (!idle_.empty()) {
      // At the cap with idle connections and a fresh-only waiter: replace the oldest idle one.
      Http1Client* oldest = idle_.front();
      removeIdle(*oldest);
      oldest->connection().close(net::CloseMode::NoFlush);
      connectNew();
    }
  }
  return true;
}

void Http1ConnPool::connectNew() {
  ++connecting_;
  stats_.upstream_connects.inc();
  auto connection = target_.scheme == "https"
                        ? net::Connection::connectTls(dispatcher_, target_.host, target_.port,
                                                      *settings_.tls->current(),
                                                      target_.server_name, options_.alpn)
                        : net::Connection::connect(dispatcher_, target_.host, target_.port);
  addClient(std::move(connection)).timer_->enable(settings_.connect_timeout);
}

Http1Client& Http1ConnPool::addClient(net::ConnectionPtr connection) {
  auto client =
      std::make_unique<Http1Client>(*this, std::move(connection), settings_.high_watermark);
  Http1Client* raw = client.get();
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
  clients_.push_back(std::move(client));
  return *raw;
}

void Http1ConnPool::adopt(net::ConnectionPtr connected) {
  Http1Client& client = addClient(std::move(connected));
  client.connected_ = true;
  if (options_.connections_gauge != nullptr) options_.connections_gauge->add(1);
  assign(client);
}

void Http1ConnPool::onClientConnected(Http1Client& client) {
  --connecting_;
  if (target_.scheme == "https") {
    stats_.upstream_tls_handshakes.inc();
    if (client.connection().tlsResumed()) stats_.upstream_tls_resumptions.inc();
  }
  client.timer_->disable();
  if (options_.connections_gauge != nullptr) options_.connections_gauge->add(1);
  assign(client);
}

void Http1ConnPool::assign(Http1Client& client) {
  if (pending_.empty()) {
    idle_.push_back(&client);
    client.timer_->enable(settings_.idle_timeout);
    return;
  }
  static_cast<Http1PoolStream&>(dequeue()).onConnectionReady(client);
}

void Http1ConnPool::onClientConnectFailed(Http1Client& client, Kind kind) {
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

void Http1ConnPool::failPending(Kind kind, const std::string& detail) {
  // A failed connect fails every waiter, as Envoy's pool purges its pending streams on a
  // connect failure: the upstream just refused (or ignored) us, and a waiter queued behind the
  // connection cap has no attempt of its own, so it would otherwise wait for a connection
  // that may never come (until stream_idle, then a wrong 504). Each caller decides what a
  // refusal means (an owner: the local 409; the local instance: 503 with Retry-After). Only
  // the waiters queued before this failure are failed: a callback may queue a new stream,
  // which gets its own attempt.
  const uint64_t boundary = next_seq_;
  while (!pending_.empty() && pending_.front().seq < boundary) {
    auto& next = static_cast<Http1PoolStream&>(dequeue());
    stats_.upstream_pending_failures.inc();
    UpstreamFailure failure;
    failure.kind = kind;
    failure.detail = detail;
    next.onConnectFailed(std::move(failure));
  }
}

void Http1ConnPool::onClientIdle(Http1Client& client) { assign(client); }

void Http1ConnPool::onClientClosed(Http1Client& client) {
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

void Http1ConnPool::removeIdle(Http1Client& client) {
  auto it = std::find(idle_.begin(), idle_.end(), &client);
  if (it != idle_.end()) idle_.erase(it);
}

void Http1ConnPool::destroy(Http1Client& client) {
  client.timer_->disable();
  for (auto it = clients_.begin(); it != clients_.end(); ++it) {
    if (it->get() == &client) {
      // Unlink first: closing raises LocalClose, which comes back here and must find nothing.
      std::unique_ptr<Http1Client> owned = std::move(*it);
      clients_.erase(it);
      if (options_.connections_gauge != nullptr && owned->connected_) {
        options_.connections_gauge->sub(1);
      }
      if (owned->connection().open()) owned->connection().close(net::CloseMode::NoFlush);
      dispatcher_.deferredDelete(std::move(owned));
      return;
    }
  }
}

}  // namespace ferry::upstream
