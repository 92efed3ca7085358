#pragma once
// Probes the local instance's readiness route (`local_instance.readiness`, Streams:
// `GET /readyz`, 200 ok / 503 "runtime draining") on the main thread's dispatcher, one probe
// at a time, never blocking: a connection, `GET <path>` with `Connection: close`, the answer's
// status. A 2xx is ready; anything else (another status, a refused connect, no answer within
// the timeout) is not, with a reason for ferry's /ready body. The next probe starts `interval`
// after the last one ended. /healthz is not affected: it stays ferry's own liveness.

#include <string>

#include "config/ferry_config.h"
#include "proxy/event/dispatcher.h"
#include "proxy/net/connection.h"
#include "proxy/stats/stats.h"

namespace ferry::server {

class ReadinessProbe : public net::ConnectionCallbacks {
 public:
  ReadinessProbe(event::Dispatcher& dispatcher, const config::LocalInstance& instance,
                 stats::Store& store);
  ~ReadinessProbe() override;

  // Starts the first probe now. Main thread.
  void start();
  // Main thread. Not ready until a probe succeeded; reason() says why.
  bool ready() const { return ready_; }
  const std::string& reason() const { return reason_; }

  // net::ConnectionCallbacks
  void onData(Buffer& input) override;
  void onEvent(net::ConnectionEvent event) override;

 private:
  void probe();
  // The answer so far is complete (Content-Length reached) or the connection closed.
  void evaluate(bool closed);
  void finish(bool ok, std::string reason);

  event::Dispatcher& dispatcher_;
  std::string host_;
  uint16_t port_;
  config::Readiness settings_;
  stats::Gauge& ready_gauge_;
  stats::Counter& successes_;
  stats::Counter& failures_;
  event::TimerPtr next_timer_;
  event::TimerPtr timeout_timer_;
  net::ConnectionPtr connection_;
  std::string answer_;  // bytes read, bounded
  bool ready_ = false;
  std::string reason_ = "the local instance was not probed yet";
};

}  // namespace ferry::server
