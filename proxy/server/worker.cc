#include "proxy/server/worker.h"

#include <sys/socket.h>
#include <unistd.h>

#include "proxy/http/local_reply.h"
#include "proxy/server/drain_stats.h"
#include "proxy/server/listener_tls.h"

namespace ferry::server {

Worker::Worker(WorkerShared& shared)
    : shared_(shared),
      dispatcher_(std::make_unique<event::Dispatcher>()),
      context_(std::make_unique<event::WorkerContext>(*dispatcher_, shared.slots)) {
  dispatcher_->setBatchedWrites(shared.batched_writes);
}

bool Worker::batchesWrites() const { return dispatcher_->batchesWrites(); }

Worker::~Worker() {
  stop();
  connections_.clear();
  listener_.reset();
  context_.reset();
}

StatusOr<uint16_t> Worker::bind(const std::string& host, uint16_t port) {
  auto listener = net::Listener::create(
      *dispatcher_, host, port, [this](int fd) { onAccept(fd); },
      [this](int) { shared_.server_stats->accept_backoffs.inc(); });
  if (!listener.isOk()) return listener.status();
  listener_ = std::move(*listener);
  return listener_->port();
}

void Worker::start() {
  thread_ = std::thread([this] { dispatcher_->run(); });
}

void Worker::drain() {
  dispatcher_->post([this] {
    draining_ = true;
    // Close the listening socket, not just stop accepting: a disabled listener still
    // completes handshakes into its backlog, so new clients would hang instead of being
    // refused (and be reset at exit).
    listener_.reset();
    // drain() may close (and unlink) a connection: iterate over a snapshot.
    std::vector<http::ConnectionManager*> open;
    for (auto& c : connections_) open.push_back(c.get());
    for (auto* c : open) c->drain();
  });
}

void Worker::finishDrain() {
  dispatcher_->post([this] {
    std::vector<http::ConnectionManager*> open;
    for (auto& c : connections_) open.push_back(c.get());
    for (auto* c : open) {
      const http::ConnectionManager::DrainEnd end = c->endDrain();
      shared_.drain_stats->live_feeds_ended.inc(end.live_feeds_ended);
      shared_.drain_stats->long_polls_answered.inc(end.long_polls_answered);
      shared_.drain_stats->streams_cut.inc(end.streams_cut);
    }
  });
}

void Worker::stop() {
  if (!thread_.joinable()) return;
  dispatcher_->post([this] { dispatcher_->exit(); });
  thread_.join();
}

void Worker::onAccept(int fd) {
  if (draining_) {
    ::close(fd);
    return;
  }
  if (shared_.connections.load(std::memory_order_relaxed) >=
      static_cast<int64_t>(shared_.max_connections)) {
    shared_.server_stats->downstream_connections_overflow.inc();
    refuseOverloaded(fd, "too many connections to this proxy");
    return;
  }
  std::string address_key;
  ClientAddressLimit* per_address = shared_.per_address;
  if (per_address != nullptr && per_address->enabled()) {
    address_key = ClientAddressLimit::keyOf(fd);
    if (!address_key.empty() && !per_address->acquire(address_key)) {
      shared_.server_stats->downstream_connections_per_address_overflow.inc();
      refuseOverloaded(fd, "too many connections from this client address");
      return;
    }
  }
  shared_.connections.fetch_add(1, std::memory_order_relaxed);
  auto connection = acceptConnection(fd);
  connections_.push_back(std::make_unique<http::ConnectionManager>(
      *this, std::move(connection), *context_, shared_.manager, *shared_.stats));
  if (!address_key.empty()) address_slots_.emplace(connections_.back().get(), address_key);
}

void Worker::refuseOverloaded(int fd, std::string_view message) {
  // A clear answer, then close. The head fits in a fresh socket's buffer.
  http::HeaderMap extra;
  extra.add("retry-after", "1");
  std::string bytes =
      http::renderHttp1AndClose(http::makeLocalReply(503, "overloaded", message, extra));
  ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
}

// TLS listener: a server session from the current context (the one SIGHUP last installed).
net::ConnectionPtr Worker::acceptConnection(int fd) {
  ListenerTls* tls = shared_.listener_tls;
  if (tls != nullptr && tls->enabled()) {
    return net::Connection::fromAcceptedTls(*dispatcher_, fd, *tls->current(),
                                            tls->handshakeTimeout(), tls);
  }
  return net::Connection::fromAccepted(*dispatcher_, fd, tls);
}

void Worker::onConnectionClosed(http::ConnectionManager& manager) {
  shared_.connections.fetch_sub(1, std::memory_order_relaxed);
  if (auto slot = address_slots_.find(&manager); slot != address_slots_.end()) {
    shared_.per_address->release(slot->second);
    address_slots_.erase(slot);
  }
  // Its socket is closed now: a listener paused for want of descriptors may accept again.
  if (listener_ != nullptr) listener_->onDescriptorReleased();
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (it->get() == &manager) {
      dispatcher_->deferredDelete(std::move(*it));
      connections_.erase(it);
      return;
    }
  }
}

}  // namespace ferry::server
