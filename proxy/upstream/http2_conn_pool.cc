#include "proxy/upstream/http2_conn_pool.h"

#include <algorithm>

namespace ferry::upstream {

using Kind = UpstreamFailure::Kind;

namespace {
http::http2::Http2ClientSettings codecSettings(const PoolSettings& settings) {
  http::http2::Http2ClientSettings out;
  // A stream's request body held for credit or the socket, as an HTTP/1.1 connection's buffer.
  out.stream_write_high_watermark = static_cast<uint32_t>(settings.high_watermark);
  return out;
}
}  // namespace

Http2ConnPool::Http2ConnPool(event::Dispatcher& dispatcher, UpstreamTarget target,
                             const PoolSettings& settings, UpstreamStats& stats, bool allow_http1)
    : ConnPoolBase(dispatcher),
      target_(std::move(target)),
      settings_(settings),
      stats_(stats),
      allow_http1_(allow_http1),
      codec_settings_(codecSettings(settings)) {}

Http2ConnPool::~Http2ConnPool() {
  pending_.clear();
  // Connections first, silently: their streams' users are gone with the worker.
  for (auto& client : clients_) {
    if (client->counted_) stats_.owner_connections_active_h2.sub(1);
    client->counted_ = false;
  }
  clients_.clear();
  closing_.clear();
  deleteStreams();
}

size_t Http2ConnPool::writeBlockedConnections() const {
  return static_cast<size_t>(std::count_if(clients_.begin(), clients_.end(),
                                           [](const auto& c) { return c->writeBlocked(); }));
}

bool Http2ConnPool::speaksHttp1() const {
  return http1_ != nullptr && std::chrono::steady_clock::now() < http1_until_;
}

UpstreamStream* Http2ConnPool::newStream(http::ResponseDecoder& decoder,
                                         UpstreamStreamCallbacks& callbacks,
                                         const RequestSource& source) {
  if (refuseUnsupportedScheme(target_, settings_, callbacks)) return nullptr;
  // An owner that chose http/1.1 lately: straight to the HTTP/1.1 pool.
  if (speaksHttp1()) return http1_->newStream(decoder, callbacks, source);
  Http2PoolStream& stream =
      addStream(std::make_unique<Http2PoolStream>(*this, decoder, callbacks, source));
  return request(stream) ? &stream : nullptr;
}

bool Http2ConnPool::request(Http2PoolStream& stream) {
  // The oldest connection with room: the newer ones empty and idle out. One whose writes are
  // stuck over the watermark has none: a stream there would wait behind bytes the owner is not
  // reading, until the PING timeout fails it.
  for (auto& client : clients_) {
    if (!client->hasCapacity()) continue;
    if (client->streamsCarried() > 0) stats_.upstream_reuses.inc();
    stream.onConnectionReady(*client);
    return false;
  }
  if (pending_.size() >= settings_.max_pending) {
    stats_.upstream_overflow.inc();
    stream.onConnectFailed(overflowFailure("too many requests waiting for an owner connection"));
    return false;
  }
  enqueue(stream);
  // One connection at a time: when it is up, its room goes to the waiters and, if they are
  // more than it takes, the next one opens then (assignPending).
  if (connecting() == 0 && clients_.size() < settings_.max_connections) connectNew();
  return true;
}

size_t Http2ConnPool::connecting() const {
  size_t n = 0;
  for (const auto& client : clients_) {
    if (client->state() == Http2Client::State::Connecting) ++n;
  }
  return n;
}

void Http2ConnPool::onStreamAssigned() { stats_.owner_h2_streams_active.add(1); }

void Http2ConnPool::onStreamDone() { stats_.owner_h2_streams_active.sub(1); }

void Http2ConnPool::connectNew() {
  stats_.upstream_connects.inc();
  net::ConnectionPtr connection;
  if (target_.scheme == "https") {
    // RFC 7301: h2 first; http/1.1 too only when this pool may fall back to it.
    std::vector<std::string> alpn = {"h2"};
    if (allow_http1_) alpn.push_back("http/1.1");
    connection = net::Connection::connectTls(dispatcher_, target_.host, target_.port,
                                             *settings_.tls->current(), target_.server_name, alpn);
  } else {
    connection = net::Connection::connect(dispatcher_, target_.host, target_.port);
  }
  clients_.push_back(std::make_unique<Http2Client>(*this, std::move(connection)));
}

void Http2ConnPool::onClientConnected(Http2Client& client) {
  if (target_.scheme == "https") {
    stats_.upstream_tls_handshakes.inc();
    if (client.connection().tlsResumed()) stats_.upstream_tls_resumptions.inc();
    // No ALPN at all also means HTTP/1.1 (RFC 7301 §3.2: the server chose not to negotiate).
    if (client.connection().tlsAlpn() != "h2") {
      if (allow_http1_) {
        // The connection is good, for HTTP/1.1: the HTTP/1.1 pool takes it (no second
        // handshake), then the waiters.
        net::ConnectionPtr connection = client.takeConnection();
        destroy(client);
        http1().adopt(std::move(connection));
        learnHttp1();
      } else {
        client.connect_timer_->disable();
        client.state_ = Http2Client::State::Closed;
        destroy(client);
        failPending(Kind::ConnectFailed,
                    "the owner did not choose h2 by ALPN "
                    "(forwarding.owner_protocol is h2)");
      }
      return;
    }
  }
  client.start();
}

void Http2ConnPool::assignPending() {
  while (!pending_.empty()) {
    Http2Client* room = nullptr;
    for (auto& client : clients_) {
      if (client->hasCapacity()) {
        room = client.get();
        break;
      }
    }
    if (room == nullptr) break;
    auto& next = static_cast<Http2PoolStream&>(dequeue());
    if (room->streamsCarried() > 0) stats_.upstream_reuses.inc();
    next.onConnectionReady(*room);
  }
  // Waiters left over: every connection is full, draining or over its write watermark; open
  // one more, under the cap.
  if (!pending_.empty() && connecting() == 0 && clients_.size() < settings_.max_connections) {
    connectNew();
  }
}

void Http2ConnPool::onClientConnectFailed(Http2Client& client, Kind kind,
                                          const std::string& detail) {
  destroy(client);
  failPending(kind, detail);
}

void Http2ConnPool::failPending(Kind kind, const std::string& detail) {
  // As the HTTP/1.1 pool (http1_conn_pool.cc): a failed connect fails every waiter; the owner
  // just refused us. Only those queued before now: a callback may queue a new stream, which
  // gets its own attempt.
  std::deque<Pending> waiting;
  waiting.swap(pending_);
  for (const Pending& p : waiting) {
    auto* stream = static_cast<Http2PoolStream*>(p.stream);
    stream->queued_ = false;
    stats_.upstream_pending_failures.inc();
    UpstreamFailure failure;
    failure.kind = kind;
    failure.detail = detail;
    stream->onConnectFailed(std::move(failure));
  }
}

void Http2ConnPool::onClientGoAway(Http2Client&) {
  // The owner drains this connection: waiters (and streams it left unprocessed, retried from
  // their reset) go to another one.
  assignPending();
}

void Http2ConnPool::onClientClosed(Http2Client& client) {
  // A close raised by destroy() itself (the client is unlinked already) needs nothing more.
  const bool known = std::any_of(clients_.begin(), clients_.end(),
                                 [&client](const auto& c) { return c.get() == &client; });
  if (!known) return;
  destroy(client);
  if (!pending_.empty()) assignPending();
}

void Http2ConnPool::destroy(Http2Client& client) {
  for (auto it = clients_.begin(); it != clients_.end(); ++it) {
    if (it->get() != &client) continue;
    // Unlinked first: closing raises LocalClose, which comes back here and must find nothing.
    std::unique_ptr<Http2Client> owned = std::move(*it);
    clients_.erase(it);
    if (owned->counted_) {
      owned->counted_ = false;
      stats_.owner_connections_active_h2.sub(1);
      stats_.owner_h2_streams_per_connection_sum.inc(owned->streamsCarried());
      stats_.owner_h2_streams_per_connection_count.inc();
    }
    if (owned->connection_ != nullptr && owned->connection().open()) owned->close();
    // A pool stream whose response ended may not have let go yet: it still points into this
    // connection's codec.
    if (owned->activeStreams() > 0) {
      closing_.push_back(std::move(owned));
    } else {
      dispatcher_.deferredDelete(std::move(owned));
    }
    return;
  }
}

void Http2ConnPool::reap(Http2Client& client) {
  for (auto it = closing_.begin(); it != closing_.end(); ++it) {
    if (it->get() != &client) continue;
    std::unique_ptr<Http2Client> owned = std::move(*it);
    closing_.erase(it);
    dispatcher_.deferredDelete(std::move(owned));
    return;
  }
}

Http1ConnPool& Http2ConnPool::http1() {
  if (http1_ == nullptr) {
    Http1PoolOptions options;
    options.alpn = {"http/1.1"};
    options.connections_gauge = &stats_.owner_connections_active_http1;
    http1_ = std::make_unique<Http1ConnPool>(dispatcher_, target_, settings_, stats_, options);
  }
  return *http1_;
}

void Http2ConnPool::learnHttp1() {
  http1_until_ = std::chrono::steady_clock::now() + kHttp1Relearn;
  ConnectionPool& pool = http1();
  std::deque<Pending> waiting;
  waiting.swap(pending_);
  for (const Pending& p : waiting) {
    auto* stream = static_cast<Http2PoolStream*>(p.stream);
    stream->queued_ = false;
    stream->handOver(pool);
  }
}

}  // namespace ferry::upstream
