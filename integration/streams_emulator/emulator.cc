#include "integration/streams_emulator/emulator.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <unistd.h>

#include <cstring>

#include "integration/streams_emulator/ownership.h"

namespace ferry::streams {

Emulator::Emulator(event_base* base, EmulatorOptions options)
    : base_(base),
      options_(std::move(options)),
      store_(options_.applied_log_limit),
      members_(options_.members) {
  reap_event_ = event_new(base_, -1, 0, &Emulator::onReap, this);
}

Emulator::~Emulator() {
  store_.setJournal(nullptr);
  if (listener_) evconnlistener_free(listener_);
  if (tls_listener_) evconnlistener_free(tls_listener_);
  if (tls_ctx_) SSL_CTX_free(tls_ctx_);
  if (reap_event_) event_free(reap_event_);
  if (drain_timer_) event_free(drain_timer_);
}

StatusOr<evconnlistener*> Emulator::bindListener(uint16_t port, evconnlistener_cb cb) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  if (inet_pton(AF_INET, options_.host.c_str(), &sin.sin_addr) != 1) {
    return invalidArgument("--host: not an IPv4 address: " + options_.host);
  }
  evconnlistener* l =
      evconnlistener_new_bind(base_, cb, this, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 1024,
                              reinterpret_cast<sockaddr*>(&sin), sizeof(sin));
  if (l == nullptr) return unavailable(std::string("bind failed: ") + strerror(errno));
  return l;
}

namespace {
uint16_t boundPort(evconnlistener* l) {
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  getsockname(evconnlistener_get_fd(l), reinterpret_cast<sockaddr*>(&bound), &len);
  return ntohs(bound.sin_port);
}

std::string sslErrors() {
  std::string out;
  char text[256];
  while (unsigned long code = ERR_get_error()) {
    ERR_error_string_n(code, text, sizeof(text));
    out += out.empty() ? "" : "; ";
    out += text;
  }
  return out;
}
}  // namespace

StatusOr<size_t> Emulator::openJournal() {
  if (options_.journal.empty()) return size_t{0};
  size_t records = 0;
  auto journal = Journal::open(options_.journal, store_, records);
  if (!journal.isOk()) return journal.status();
  journal_ = std::move(*journal);
  store_.setJournal(journal_.get());
  return records;
}

StatusOr<uint16_t> Emulator::listen() {
  auto l = bindListener(options_.port, &Emulator::onAccept);
  if (!l.isOk()) return l.status();
  listener_ = *l;
  return boundPort(listener_);
}

StatusOr<uint16_t> Emulator::listenTls() {
  if (options_.tls_cert.empty()) return uint16_t{0};
  tls_ctx_ = SSL_CTX_new(TLS_server_method());
  if (tls_ctx_ == nullptr) return internalError("SSL_CTX_new: " + sslErrors());
  SSL_CTX_set_min_proto_version(tls_ctx_, TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(tls_ctx_, options_.tls_cert.c_str()) != 1) {
    return invalidArgument("--tls-cert " + options_.tls_cert + ": " + sslErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(tls_ctx_, options_.tls_key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(tls_ctx_) != 1) {
    return invalidArgument("--tls-key " + options_.tls_key + ": " + sslErrors());
  }
  if (!options_.tls_client_ca.empty()) {
    if (SSL_CTX_load_verify_locations(tls_ctx_, options_.tls_client_ca.c_str(), nullptr) != 1) {
      return invalidArgument("--tls-client-ca " + options_.tls_client_ca + ": " + sslErrors());
    }
    SSL_CTX_set_client_CA_list(tls_ctx_, SSL_load_client_CA_file(options_.tls_client_ca.c_str()));
    SSL_CTX_set_verify(tls_ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  auto l = bindListener(options_.tls_port, &Emulator::onAcceptTls);
  if (!l.isOk()) return l.status();
  tls_listener_ = *l;
  return boundPort(tls_listener_);
}

void Emulator::onAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* ctx) {
  static_cast<Emulator*>(ctx)->accept(fd, nullptr);
}

void Emulator::onAcceptTls(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* ctx) {
  auto* self = static_cast<Emulator*>(ctx);
  SSL* ssl = SSL_new(self->tls_ctx_);
  if (ssl == nullptr) {
    close(fd);
    return;
  }
  self->accept(fd, ssl);
}

void Emulator::accept(int fd, SSL* ssl) {
  if (knobs_.refuse) {
    ++connections_refused_;
    if (ssl != nullptr) SSL_free(ssl);
    close(fd);
    return;
  }
  ++connections_accepted_;
  if (ssl != nullptr) ++tls_connections_accepted_;
  auto conn =
      std::make_unique<ServerConnection>(base_, fd, *this, options_.name, options_.body_limit, ssl);
  conn->setContext(std::make_unique<Exchange>());
  ServerConnection* raw = conn.get();
  connections_.emplace(raw, std::move(conn));
}

void Emulator::onConnectionClosed(ServerConnection& conn) {
  unsubscribe(conn);
  auto it = connections_.find(&conn);
  if (it == connections_.end()) return;
  // Destroyed from the loop, never inside the connection's own callback.
  graveyard_.push_back(std::move(it->second));
  connections_.erase(it);
  event_active(reap_event_, 0, 0);
}

void Emulator::onReap(evutil_socket_t, short, void* ctx) {
  static_cast<Emulator*>(ctx)->graveyard_.clear();
}

void Emulator::startDrain() {
  if (draining_) return;
  draining_ = true;
  drain_timer_ = evtimer_new(base_, &Emulator::onDrainDone, this);
  const auto us = static_cast<int64_t>(options_.drain_seconds * 1e6);
  timeval tv{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
  evtimer_add(drain_timer_, &tv);
}

void Emulator::onDrainDone(evutil_socket_t, short, void* ctx) {
  event_base_loopexit(static_cast<Emulator*>(ctx)->base_, nullptr);
}

Exchange& Emulator::exchange(ServerConnection& conn) {
  return *static_cast<Exchange*>(conn.context());
}

Emulator::OwnerCheck Emulator::checkOwner(std::string_view name) const {
  OwnerCheck c;
  c.shard = shardOf(name, options_.shards);
  const int idx = ownerIndexOfShard(c.shard, members_);
  c.owner_name = idx >= 0 ? members_[idx] : std::string();
  c.owner = idx >= 0 && members_[idx] == options_.name;
  if (!c.owner && !previous_members_.empty() &&
      std::chrono::steady_clock::now() < handover_until_) {
    const int prev = ownerIndexOfShard(c.shard, previous_members_);
    c.moving = prev >= 0 && previous_members_[prev] == options_.name;
  }
  return c;
}

void Emulator::applyMembers(std::vector<std::string> members, uint64_t handover_ms) {
  previous_members_ = std::move(members_);
  members_ = std::move(members);
  handover_until_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(handover_ms);
  if (handover_ms == 0) previous_members_.clear();
  endFeedsNoLongerOwned();
}

// ---- Request flow ----

bool Emulator::onRequestHead(ServerConnection& conn, HttpRequest& request) {
  Exchange& ex = exchange(conn);
  ex.route = parseRoute(request.method, request.path(), request.query());
  ex.waiting = false;
  request.route_tag = static_cast<int>(ex.route.tag);
  const Surface s = ex.route.surface;
  if (s != Surface::Raw && s != Surface::Product) return false;

  if (knobs_.reset) {
    conn.resetNow();
    return true;
  }
  if (knobs_.early_409 || knobs_.early_409_after_bytes > 0) {
    const OwnerCheck check = checkOwner(ex.route.name);
    if (!check.owner && !check.moving) {
      if (knobs_.early_409) {
        replyNotOwner(conn, check, s == Surface::Product);
        return true;
      }
      conn.setBodyTrigger(knobs_.early_409_after_bytes);
    }
  }
  return false;
}

bool Emulator::onBodyTrigger(ServerConnection& conn, HttpRequest& request) {
  Exchange& ex = exchange(conn);
  const OwnerCheck check = checkOwner(ex.route.name);
  if (check.owner || check.moving) return false;
  replyNotOwner(conn, check, ex.route.surface == Surface::Product);
  return true;
}

void Emulator::onBodyTooLarge(ServerConnection& conn, HttpRequest& request) {
  replyError(conn, 413, "body_too_large", "request body exceeds the limit",
             exchange(conn).route.surface == Surface::Product);
}

void Emulator::onRequestComplete(ServerConnection& conn, HttpRequest& request) {
  const Surface s = exchange(conn).route.surface;
  const bool data_plane = s == Surface::Raw || s == Surface::Product;
  if (data_plane && knobs_.delay_ms > 0) {
    conn.setTimer(knobs_.delay_ms, [this, &conn, &request] { dispatch(conn, request); });
    return;
  }
  dispatch(conn, request);
}

void Emulator::dispatch(ServerConnection& conn, HttpRequest& request) {
  Exchange& ex = exchange(conn);
  const Route& route = ex.route;
  switch (route.surface) {
    case Surface::Health:
    case Surface::Readyz:
      if (draining_) {
        conn.sendResponse(503, {{"content-type", "text/plain"}}, "runtime draining");
      } else {
        conn.sendResponse(200, {{"content-type", "text/plain"}}, "ok");
      }
      return;
    case Surface::Livez:
      conn.sendResponse(200, {{"content-type", "text/plain"}}, "alive");
      return;
    case Surface::Debug:
      handleDebug(conn, request);
      return;
    case Surface::Other:
      replyError(conn, 404, "not_found", "no route", false);
      return;
    case Surface::Raw:
    case Surface::Product:
      break;
  }
  const bool product = route.surface == Surface::Product;
  if (knobs_.cut_after_bytes) conn.cutAfterBodyBytes(*knobs_.cut_after_bytes);
  if (route.name.empty()) {
    replyError(conn, 404, "stream_not_found", "empty stream name", product);
    return;
  }
  // The whole body has been read (a Streams instance reads it before checking ownership).
  const OwnerCheck check = checkOwner(route.name);
  // Product create and SSE connect answer in the raw not_ring_owner form.
  const bool product_form = product && route.op != ProductOp::Create && route.op != ProductOp::Sse;
  if (check.moving) {
    replyMoving(conn, check, product_form);
    return;
  }
  if (!check.owner) {
    replyNotOwner(conn, check, product_form);
    return;
  }
  if (product) {
    handleProduct(conn, request, route);
  } else {
    handleRaw(conn, request, route);
  }
}

void Emulator::onResponseStarted(ServerConnection& conn, const HttpRequest& request, int status) {
  const size_t tag = request.route_tag < 0 ? static_cast<size_t>(RouteTag::Other)
                                           : static_cast<size_t>(request.route_tag);
  ++counts_[tag][status];
  if (request.header("streams-forwarded") != nullptr) ++forwarded_counts_[tag][status];
}

}  // namespace ferry::streams
