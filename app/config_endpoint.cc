#include "app/config_endpoint.h"

#include "config/config_json.h"

namespace ferry::app {

void addConfigEndpoint(Server& server, const config::FerryConfig& config, uint32_t workers) {
  server.admin().addHandler("/config", [&server, &config, workers] {
    config::RuntimeFacts facts;
    facts.workers = workers;
    facts.batched_writes = server.batchesWrites();
    facts.listener_port = server.listenerPort();
    facts.admin_port = server.adminPort();
    // The loader's gauge (forwarding on); absent (-1) when forwarding is off.
    const int64_t version = server.statsStore().valueOf("ferry_peer_table_version");
    if (version >= 0) facts.peer_table_version = static_cast<uint64_t>(version);
    return admin::AdminResponse{200, "application/json",
                                config::renderConfigJson(config, facts) + "\n"};
  });
}

}  // namespace ferry::app
