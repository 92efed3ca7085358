#include "app/server.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <thread>

#include "app/streams_live_feeds.h"
#include "filters/router/router_filter.h"
#include "proxy/net/listener.h"
#include "proxy/server/allocator.h"
#include "proxy/server/build_flavor.h"
#include "proxy/server/tls_reload.h"
#include "proxy/server/version.h"
#include "proxy/tls/library_version.h"

namespace ferry::app {

Server::Server(const config::FerryConfig& config) : config_(config) {
  stats_ = std::make_unique<stats::ProxyStats>(store_);
  server_stats_ = std::make_unique<server::ServerStats>(store_);
  // Constant 1; the label says which build answers (the Prometheus *_build_info idiom).
  store_
      .gauge("ferry_build_info", "The running ferry build (value 1)",
             {{"version", server::kVersion},
              {"allocator", server::allocatorName()},
              {"tls", tls::libraryVersion()},
              {"flavor", server::buildFlavor()}})
      .set(1);
  const auto& limits = config_.limits;
  const auto& timeouts = config_.timeouts;
  auto& manager = shared_.manager;
  manager.max_request_header_bytes = limits.max_request_header_bytes;
  manager.max_request_headers = limits.max_request_headers;
  manager.max_active_requests_per_connection = limits.max_active_requests_per_connection;
  manager.high_watermark = limits.buffer_high_watermark_bytes;
  manager.request_head_timeout = timeouts.request_head;
  manager.keepalive_idle_timeout = timeouts.keepalive_idle;
  const config::ListenerHttp2& http2 = config_.listener.http2;
  manager.http2_enabled = http2.enabled;
  manager.http2.max_concurrent_streams = http2.max_concurrent_streams;
  manager.http2.initial_stream_window = http2.initial_stream_window_bytes;
  manager.http2.max_request_header_bytes = limits.max_request_header_bytes;
  manager.http2.max_request_headers = limits.max_request_headers;
  manager.http2.stream_write_high_watermark = limits.buffer_high_watermark_bytes;
  manager.stream.replay_limit = limits.replay_buffer_bytes;
  manager.stream.stream_idle = timeouts.stream_idle;
  manager.stream.request_body_idle = timeouts.request_body_idle;
  manager.stream.response_timeout = timeouts.response;
  manager.stream.identity = {config_.forwarded_headers.x_forwarded,
                             config_.forwarded_headers.trusted_hops};
  filters::RouterConfig router;
  router.local = {"local", "http", config_.local_instance.host, config_.local_instance.port, ""};
  router.response_head_timeout = timeouts.response_head;
  router.live_feeds = streamsLiveFeedRules();
  shared_.upstream_stats = std::make_unique<upstream::UpstreamStats>(store_);
  manager.stream.terminal = std::make_shared<filters::RouterFilterFactory>(
      router,
      upstream::WorkerUpstreams::allocateSlot(shared_.slots, shared_.pools,
                                              *shared_.upstream_stats),
      store_);
  shared_.pools.max_connections = config_.upstream.max_connections;
  shared_.pools.max_pending = limits.max_pending_upstream_requests;
  shared_.pools.connect_timeout = timeouts.upstream_connect;
  shared_.pools.idle_timeout = timeouts.upstream_idle;
  shared_.pools.high_watermark = limits.buffer_high_watermark_bytes;
  shared_.pools.local = router.local;
  const auto& fwd = config_.forwarding;
  shared_.pools.owner_protocol =
      fwd.owner_protocol == config::OwnerProtocol::H2      ? upstream::OwnerProtocol::H2
      : fwd.owner_protocol == config::OwnerProtocol::Http1 ? upstream::OwnerProtocol::Http1
                                                           : upstream::OwnerProtocol::Auto;
  shared_.pools.h2_max_streams_per_connection = fwd.owner_http2.max_streams_per_connection;
  shared_.pools.h2_ping_interval = fwd.owner_http2.ping_interval;
  shared_.pools.h2_ping_timeout = fwd.owner_http2.ping_timeout;
  shared_.max_connections = limits.max_connections;
  shared_.batched_writes = config_.batched_writes;
  per_address_ =
      std::make_unique<server::ClientAddressLimit>(limits.max_connections_per_client_address);
  shared_.per_address = per_address_.get();
  shared_.stats = stats_.get();
  shared_.server_stats = server_stats_.get();
  drain_stats_ = std::make_unique<server::DrainStats>(store_);
  shared_.drain_stats = drain_stats_.get();
  if (config_.local_instance.readiness.enabled) {
    readiness_ = std::make_unique<server::ReadinessProbe>(main_, config_.local_instance, store_);
  }
  listener_tls_ =
      std::make_unique<server::ListenerTls>(config_.listener.tls, store_, *server_stats_);
  shared_.listener_tls = listener_tls_.get();

  admin::AdminLimits admin_limits;
  admin_limits.max_connections = config_.admin.max_connections;
  admin_limits.max_head_bytes = limits.max_request_header_bytes;
  admin_limits.head_timeout = timeouts.request_head;
  admin_limits.idle_timeout = timeouts.keepalive_idle;
  admin_ = std::make_unique<admin::AdminServer>(main_, admin_limits, store_);
  admin_->addHandler("/stats", [this] {
    admin::AdminResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = store_.renderPrometheus() + process_metrics_.render();
    return r;
  });
  admin_->addHandler("/ready", [this] { return readyResponse(); });
  // POST only: a drain is an action (a GET is 405). Idempotent: a repeat changes nothing.
  admin_->addPostHandler("/drain", [this] {
    drain_stats_->requests_admin.inc();
    beginDrain();
    return admin::AdminResponse{202, "text/plain; charset=utf-8", "draining\n"};
  });
  admin_->addHandler("/healthz", [] { return admin::AdminResponse{200, "text/plain", "ok\n"}; });
}

// For load balancers and orchestrators: 200 only while ferry serves, does not drain, and the
// local instance's readiness route (when probed) says ready. Main thread, as the probe.
admin::AdminResponse Server::readyResponse() const {
  admin::AdminResponse r;
  r.status = 503;
  if (!serving_.load()) {
    r.body = "starting\n";
  } else if (draining_.load()) {
    r.body = "draining\n";
  } else if (readiness_ != nullptr && !readiness_->ready()) {
    r.body = "local instance not ready: " + readiness_->reason() + "\n";
  } else {
    r.status = 200;
    r.body = "ready\n";
  }
  return r;
}

Server::~Server() {
  for (auto& worker : workers_) worker->stop();
  workers_.clear();
  for (::event* ev : signal_events_) event_free(ev);
}

void Server::addFilter(std::shared_ptr<const http::FilterFactory> factory) {
  shared_.manager.stream.filters.push_back(std::move(factory));
}

void Server::addAccessLogFields(const access_log::InfoFields& fields) {
  access_log_fields_.insert(access_log_fields_.end(), fields.begin(), fields.end());
}

Status Server::start() {
  if (!config_.access_log.empty()) {
    access_log::Format format = access_log::Format::Json;
    access_log::parseFormat(config_.access_log_format, format);  // the loader checked it
    auto log = access_log::AccessLog::open(config_.access_log, format);
    if (!log.isOk()) return log.status();
    (*log)->setWriteFailureCounter(
        &store_.counter("ferry_access_log_write_failures_total",
                        "Access log records that could not be written whole (e.g. a full disk)"));
    (*log)->setInfoFields(access_log_fields_);
    shared_.manager.stream.access_log = *log;
  }
  if (config_.forwarding.enabled) {
    // One client TLS context for every worker's pools to https owners, re-read on SIGHUP.
    auto context = loadTlsContext();
    if (!context.isOk()) return context.status();
    shared_.pools.tls = std::make_shared<tls::ClientContextSlot>(*context);
    // Only files can change: with no forwarding.tls file set there is nothing to re-read (and
    // a "files reloaded" line on SIGHUP would claim work that was not done).
    const auto& t = config_.forwarding.tls;
    if (!t.ca_file.empty() || !t.client_cert_file.empty() || !t.client_key_file.empty()) {
      addReloadHook([this] { reloadTlsContext(); });
    }
  }
  if (listener_tls_->enabled()) {
    // One server TLS context for every worker's listener, re-read on SIGHUP.
    Status loaded = listener_tls_->load();
    if (!loaded.isOk()) return loaded;
    addReloadHook([this] { listener_tls_->reload(); });
  }
  uint32_t count = config_.workers;
  if (count == 0) count = std::max(1u, std::thread::hardware_concurrency());
  uint16_t port = config_.listener.port;
  if (port != 0 && !config_.listener.reuse_port) {
    // The workers bind with SO_REUSEPORT (one socket each): without this probe a second ferry
    // on a port in use would share it with the first and take half its connections.
    int error = 0;
    Status free = net::probeExclusiveBind(config_.listener.host, port, &error);
    if (!free.isOk()) {
      std::string why = error == EADDRINUSE ? "address in use (another process listens there; "
                                              "listener.reuse_port: true shares the port)"
                                            : free.message();
      return unavailable("listener.port " + std::to_string(port) + ": " + why);
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    auto worker = std::make_unique<server::Worker>(shared_);
    // The first worker may bind port 0; the others join the port it got (SO_REUSEPORT).
    auto bound = worker->bind(config_.listener.host, port);
    if (!bound.isOk()) return bound.status();
    port = *bound;
    workers_.push_back(std::move(worker));
  }
  listener_port_ = port;
  batches_writes_ = !workers_.empty() && workers_.front()->batchesWrites();
  Status admin_status = admin_->start(config_.admin.host, config_.admin.port);
  if (!admin_status.isOk()) return admin_status;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    ::event* ev = evsignal_new(main_.base(), sig, &Server::onSignal, this);
    evsignal_add(ev, nullptr);
    signal_events_.push_back(ev);
  }
  std::signal(SIGPIPE, SIG_IGN);
  for (auto& worker : workers_) worker->start();
  if (readiness_ != nullptr) readiness_->start();
  serving_ = true;
  return Status::ok();
}

StatusOr<tls::ClientContextSharedPtr> Server::loadTlsContext() const {
  const auto& t = config_.forwarding.tls;
  std::string field;
  auto context = tls::ClientContext::create(
      {t.ca_file, t.verify, t.client_cert_file, t.client_key_file}, &field);
  if (!context.isOk()) {
    return invalidArgument("forwarding.tls" + (field.empty() ? "" : "." + field) + ": " +
                           context.status().message());
  }
  return *context;
}

// Operators rotate CA bundles and client certificates in place: the same paths, new contents.
// A file that fails to load keeps the last good context (forwarding goes on with it); new
// connections use the new one, pooled ones keep theirs until they close.
void Server::reloadTlsContext() {
  server::applyTlsReload("forwarding.tls", loadTlsContext(), *shared_.pools.tls, *server_stats_);
}

std::vector<event::WorkerContext*> Server::workerContexts() {
  std::vector<event::WorkerContext*> out;
  for (auto& worker : workers_) out.push_back(&worker->context());
  return out;
}

int Server::run() {
  main_.run();
  for (auto& worker : workers_) worker->stop();
  if (draining_.load()) {
    // The deadline's outcomes, for whoever reads the log after the process is gone.
    std::fprintf(stderr,
                 "ferry: drained: ferry_drain_live_feeds_ended_total{end=\"last_chunk\"} %llu, "
                 "{end=\"retry_503\"} %llu, ferry_drain_streams_cut_total %llu\n",
                 static_cast<unsigned long long>(drain_stats_->live_feeds_ended.value()),
                 static_cast<unsigned long long>(drain_stats_->long_polls_answered.value()),
                 static_cast<unsigned long long>(drain_stats_->streams_cut.value()));
  }
  return 0;
}

void Server::onSignal(evutil_socket_t signal, short, void* arg) {
  auto* self = static_cast<Server*>(arg);
  if (signal == SIGHUP) {
    for (auto& hook : self->reload_hooks_) hook();
    return;
  }
  self->drain_stats_->requests_signal.inc();
  self->beginDrain();
}

void Server::requestDrain() {
  main_.post([this] { beginDrain(); });
}

void Server::beginDrain() {
  if (draining_.exchange(true)) return;  // /ready fails from now on
  drain_stats_->draining.set(1);
  const auto delay = config_.timeouts.drain_delay;
  std::fprintf(stderr, "ferry: draining: /ready fails; the listener closes in %lld ms\n",
               static_cast<long long>(delay.count()));
  if (delay.count() == 0) {
    closeListeners();
    return;
  }
  // Load balancers keep sending until their health checks see /ready fail: keep serving
  // new connections meanwhile, as before the drain.
  drain_delay_timer_ = main_.createTimer([this] { closeListeners(); });
  drain_delay_timer_->enable(delay);
}

void Server::closeListeners() {
  for (auto& worker : workers_) worker->drain();
  drain_deadline_ = std::chrono::steady_clock::now() + config_.timeouts.drain;
  drain_poll_ = main_.createTimer([this] { checkDrained(); });
  drain_poll_->enable(event::Millis(20));
}

void Server::checkDrained() {
  // The bytes that end a live feed, for clients that read them; one that does not read is
  // not waited for longer than this.
  constexpr auto kFlushGrace = std::chrono::seconds(1);
  const auto now = std::chrono::steady_clock::now();
  if (shared_.connections.load() == 0 || (deadline_passed_ && now >= flush_deadline_)) {
    main_.exit();
    return;
  }
  if (!deadline_passed_ && now >= drain_deadline_) {
    deadline_passed_ = true;
    flush_deadline_ = now + kFlushGrace;
    for (auto& worker : workers_) worker->finishDrain();
  }
  drain_poll_->enable(event::Millis(20));
}

}  // namespace ferry::app
