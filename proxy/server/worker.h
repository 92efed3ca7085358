#pragma once
// A worker thread: its own dispatcher (event loop), its own listening socket (SO_REUSEPORT),
// its own context (event/worker_context.h: the per-worker state filters and the router keep in
// their slots, such as its upstream pools) and the downstream connections it accepted. Nothing
// on the request path is shared with another worker except relaxed atomic counters.

#include <atomic>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/http/connection_manager.h"
#include "proxy/net/listener.h"
#include "proxy/server/client_address_limit.h"
#include "proxy/server/server_stats.h"
#include "proxy/stats/proxy_stats.h"
#include "proxy/upstream/conn_pool.h"
#include "proxy/upstream/upstream_stats.h"

namespace ferry::server {

// Shared by all workers; owned by the Server, outlives the workers.
class ListenerTls;
struct DrainStats;

struct WorkerShared {
  http::ConnectionManagerConfig manager;
  upstream::PoolSettings pools;
  uint32_t max_connections = 10000;
  bool batched_writes = true;           // config `batched_writes`: Dispatcher::setBatchedWrites
  stats::ProxyStats* stats = nullptr;   // the connection managers' and their streams'
  ServerStats* server_stats = nullptr;  // the accept path's refusals and backoffs
  std::unique_ptr<upstream::UpstreamStats> upstream_stats;  // the pools' metrics
  DrainStats* drain_stats = nullptr;
  ListenerTls* listener_tls = nullptr;        // accepts with TLS when enabled(); counts mismatches
  ClientAddressLimit* per_address = nullptr;  // limits.max_connections_per_client_address
  std::atomic<int64_t> connections{0};
  // The per-worker slots, allocated at config time (the composition root: the router's pools,
  // the filters' state); each worker's context holds one value per slot.
  event::WorkerSlots slots;
};

class Worker : public http::ConnectionManagerOwner {
 public:
  explicit Worker(WorkerShared& shared);
  ~Worker() override;

  // Binds this worker's listener (before start()). Returns the bound port.
  StatusOr<uint16_t> bind(const std::string& host, uint16_t port);
  void start();
  // This worker's writes go out batched (config on and io_uring usable on this kernel).
  bool batchesWrites() const;
  // Thread-safe. Stops accepting and closes connections once their response is done.
  void drain();
  // Thread-safe. The drain's deadline: live feeds end with a complete response (counted),
  // every other connection closes now (a request in flight is counted as cut).
  void finishDrain();
  // Thread-safe. Ends the loop (closing whatever is left) and joins the thread.
  void stop();
  event::Dispatcher& dispatcher() { return *dispatcher_; }
  // Made with the worker (main thread), used on its thread; see event/worker_context.h.
  event::WorkerContext& context() { return *context_; }

  // http::ConnectionManagerOwner
  void onConnectionClosed(http::ConnectionManager& manager) override;

 private:
  void onAccept(int fd);
  net::ConnectionPtr acceptConnection(int fd);
  // Answers 503 with Retry-After on a fresh socket and closes it (overload).
  static void refuseOverloaded(int fd, std::string_view message);
  WorkerShared& shared_;
  std::unique_ptr<event::Dispatcher> dispatcher_;
  // Destroyed after the connections (which hold references to it), before the dispatcher.
  std::unique_ptr<event::WorkerContext> context_;
  std::unique_ptr<net::Listener> listener_;
  std::list<std::unique_ptr<http::ConnectionManager>> connections_;
  // With a per-address limit: the address key each open connection holds a slot for.
  std::unordered_map<const http::ConnectionManager*, std::string> address_slots_;
  std::thread thread_;
  bool draining_ = false;
};

}  // namespace ferry::server
