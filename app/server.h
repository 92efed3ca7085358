#pragma once
// The ferry process: N workers serving the listener, the admin listener and signal handling
// on the main thread. main() builds one from a loaded config; integration tests build one in
// process with extra filters.
//
// Drain (SIGTERM/SIGINT or admin POST /drain, the same sequence; docs/drain.md): /ready fails
// at once; the listener keeps accepting for timeouts.drain_delay (load balancers notice), then
// closes; idle keep-alives close, busy ones close after their response (`Connection: close`);
// at timeouts.drain after that, live feeds end with a complete response and the rest is cut;
// ferry exits when no connection is left. SIGHUP runs the reload hooks.

#include <event2/event.h>

#include <functional>
#include <memory>
#include <vector>

#include "config/ferry_config.h"
#include "proxy/access_log/access_log.h"
#include "proxy/admin/admin_server.h"
#include "proxy/http/filter.h"
#include "proxy/server/drain_stats.h"
#include "proxy/server/listener_tls.h"
#include "proxy/server/readiness_probe.h"
#include "proxy/server/server_stats.h"
#include "proxy/server/worker.h"
#include "proxy/stats/process_metrics.h"
#include "proxy/stats/proxy_stats.h"
#include "proxy/tls/client_context.h"

namespace ferry::app {

class Server {
 public:
  explicit Server(const config::FerryConfig& config);
  ~Server();

  stats::Store& statsStore() { return store_; }
  stats::ProxyStats& stats() { return *stats_; }
  event::Dispatcher& mainDispatcher() { return main_; }
  admin::AdminServer& admin() { return *admin_; }
  // Where components that keep state per worker allocate their slot (event/worker_context.h).
  // Call before start().
  event::WorkerSlots& workerSlots() { return shared_.slots; }
  // Filters run in the order added, before the router. Call before start().
  void addFilter(std::shared_ptr<const http::FilterFactory> factory);
  // Fields filters write into the stream info map, rendered by the access log in the order
  // added (access_log::InfoField). Call before start().
  void addAccessLogFields(const access_log::InfoFields& fields);
  // Runs on SIGHUP, on the main thread.
  void addReloadHook(std::function<void()> hook) { reload_hooks_.push_back(std::move(hook)); }

  // Binds the listeners and the admin port and starts the workers.
  Status start();
  uint16_t listenerPort() const { return listener_port_; }
  // The workers batch their writes (config `batched_writes` on and io_uring usable here), as
  // start() found it before their threads ran (read from any thread afterwards).
  bool batchesWrites() const { return batches_writes_; }
  // The workers' contexts (after start()); each worker keeps its own until it is destroyed.
  std::vector<event::WorkerContext*> workerContexts();
  uint16_t adminPort() const { return admin_->port(); }
  // Runs the main loop until a drain completes. Returns the process exit code.
  int run();
  // Thread-safe: begins a drain (as SIGTERM does).
  void requestDrain();
  bool draining() const { return draining_.load(); }

 private:
  static void onSignal(evutil_socket_t signal, short, void* arg);
  void beginDrain();
  // After drain_delay: the listeners close and connections drain.
  void closeListeners();
  admin::AdminResponse readyResponse() const;
  // forwarding.tls's files, read now (at start and on SIGHUP); errors name the key path.
  StatusOr<tls::ClientContextSharedPtr> loadTlsContext() const;
  void reloadTlsContext();
  void checkDrained();

  config::FerryConfig config_;
  event::Dispatcher main_;
  stats::Store store_;
  std::unique_ptr<stats::ProxyStats> stats_;
  std::unique_ptr<server::ServerStats> server_stats_;  // the workers' accept path, TLS reloads
  stats::ProcessMetrics process_metrics_;
  std::unique_ptr<server::ClientAddressLimit>
      per_address_;  // limits.max_connections_per_client_address
  std::unique_ptr<server::ListenerTls>
      listener_tls_;  // listener.tls (or just the plain-port counter)
  server::WorkerShared shared_;
  std::vector<std::unique_ptr<server::Worker>> workers_;
  bool batches_writes_ = false;  // batchesWrites()
  std::unique_ptr<admin::AdminServer> admin_;
  std::vector<::event*> signal_events_;
  std::vector<std::function<void()>> reload_hooks_;
  access_log::InfoFields access_log_fields_;
  std::unique_ptr<server::DrainStats> drain_stats_;
  std::unique_ptr<server::ReadinessProbe> readiness_;  // null without local_instance.readiness
  event::TimerPtr drain_delay_timer_;
  event::TimerPtr drain_poll_;
  std::chrono::steady_clock::time_point drain_deadline_;
  // Set at the deadline: live feeds were ended, the rest cut; their last bytes get until here.
  bool deadline_passed_ = false;
  std::chrono::steady_clock::time_point flush_deadline_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> serving_{false};
  uint16_t listener_port_ = 0;
};

}  // namespace ferry::app
