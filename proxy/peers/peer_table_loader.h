#pragma once
// Loads the trusted peer table from fleet config (the fleet's urls.json, or the inline map in
// ferry's YAML) and keeps it current: the fleet file is checked every watch interval (size,
// mtime, inode) and on reload() (SIGHUP). A file that is missing, unreadable or invalid keeps
// the last good table; the reason is logged, counted and shown on the admin's /peers.
// Hostnames are resolved here, at each load (so SIGHUP also re-resolves); a name that does not
// resolve is kept without an address and counted. Runs on the main thread; publishes through a
// PeerTableProvider.

#include <sys/stat.h>

#include <chrono>
#include <map>
#include <string>

#include "proxy/event/dispatcher.h"
#include "proxy/peers/peer_resolver.h"
#include "proxy/peers/peer_table_parser.h"
#include "proxy/peers/peer_table_provider.h"
#include "proxy/stats/stats.h"

namespace ferry::peers {

// Where the table comes from and what it accepts. Built from `forwarding` in ferry's config by
// the server (proxy/ does not include config/).
struct PeerTableSource {
  std::string fleet_file;                    // the fleet's urls.json, watched; empty: `peers`
  std::map<std::string, std::string> peers;  // inline name -> origin
  PeerPolicy policy;
  event::Millis watch_interval{1'000};  // fleet file change detection
};

class PeerTableLoader {
 public:
  PeerTableLoader(event::Dispatcher& main, const PeerTableSource& source,
                  PeerTableProvider& provider, stats::Store& stats,
                  HostResolver resolver = resolveWithSystem);
  // Loads the first table. Fails when it cannot (ferry then refuses to start).
  Status start();
  // Re-reads the source now (SIGHUP). Keeps the last good table on failure.
  void reload();
  // JSON for GET /peers: version, source, loaded_at (this version's publication), read_at
  // (the last good read), last_error (null since a good read), peers.
  std::string renderJson() const;

 private:
  // Parses the source and resolves its hostnames.
  StatusOr<std::map<std::string, PeerOrigin>> readSource();
  void resolveAddresses(std::map<std::string, PeerOrigin>& peers);
  void check();
  // Makes `peers` the current table (next version) and updates the counters.
  void publish(std::map<std::string, PeerOrigin> peers);
  bool fileChanged();

  event::Dispatcher& main_;
  PeerTableSource source_;
  PeerTableProvider& provider_;
  stats::Counter& reloads_;
  stats::Counter& reload_failures_;
  stats::Gauge& version_gauge_;
  stats::Gauge& size_gauge_;
  stats::Counter& resolve_failures_;
  HostResolver resolver_;
  event::TimerPtr watch_timer_;
  struct stat last_stat_ {};
  bool have_stat_ = false;
  uint64_t version_ = 0;
  std::string last_error_;
  std::chrono::system_clock::time_point loaded_at_;
  std::chrono::system_clock::time_point read_at_;
  std::chrono::system_clock::time_point last_error_at_;
};

}  // namespace ferry::peers
