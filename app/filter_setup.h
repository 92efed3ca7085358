#pragma once
// Builds the filter chain a config asks for and what those filters need around them. The chain:
// fault injection (`fault`, only when enabled), then the live-feeds filter (SSE feeds with
// `live_feeds.resume` or `share`, long-polls with `resume`), then owner forwarding, then the
// router. For
// owner forwarding, the peer table (loaded from fleet config, watched, swapped into every
// worker), its admin endpoint /peers and its SIGHUP reload.
//
// Use: prepare() before Server::start() (a bad fleet config stops the start), attach() after.

#include <memory>

#include "app/server.h"
#include "config/ferry_config.h"
#include "filters/fault/fault_stats.h"
#include "filters/live_feeds/live_feeds_stats.h"
#include "filters/live_feeds/long_poll_filter.h"
#include "filters/owner_forwarding/owner_forwarding_filter.h"
#include "proxy/common/status.h"
#include "proxy/peers/peer_table_loader.h"

namespace ferry::app {

class FilterSetup {
 public:
  FilterSetup(Server& server, const config::FerryConfig& config);
  // Loads the peer table and adds the filters to the server.
  Status prepare();
  // Hands the peer table to the started workers and starts watching the fleet file.
  void attach();
  peers::PeerTableProvider& peers() { return provider_; }

 private:
  // fault.enabled: the fault filter, first in the chain.
  void addFaultFilter();
  // live_feeds' long-poll part (the live-feeds filter serves long-polls too).
  filters::LongPollConfig longPollConfig();

  Server& server_;
  const config::FerryConfig& config_;
  peers::PeerTableProvider provider_;  // its slot allocated in the constructor
  std::unique_ptr<peers::PeerTableLoader> loader_;
  std::unique_ptr<filters::LiveFeedsStats> live_feeds_stats_;  // live_feeds.resume
  std::unique_ptr<filters::OwnerForwardingStats> stats_;
  std::unique_ptr<filters::OwnerRouting> routing_;    // forwarding.owner_routing.enabled
  std::unique_ptr<filters::FaultStats> fault_stats_;  // fault.enabled
};

}  // namespace ferry::app
