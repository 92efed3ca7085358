#pragma once
// SIGHUP bookkeeping shared by every set of TLS files (forwarding.tls for upstream pools,
// listener.tls for the listener): operators rotate certificates, keys and CA bundles in place
// (same paths, new contents). A set that loads is swapped whole into its slot (new connections
// use it; open ones keep theirs) and counted in ferry_tls_reloads_total; a set that fails keeps
// the last good context, is logged with the key path at fault and counted in
// ferry_tls_reload_failures_total (ServerStats).

#include <cstdio>
#include <memory>

#include "proxy/common/status.h"
#include "proxy/server/server_stats.h"
#include "proxy/tls/context_slot.h"

namespace ferry::server {

// `loaded`'s error message starts with the key path ("listener.tls.cert_file: ..."). Returns
// true when the new context was swapped in.
template <typename Context>
bool applyTlsReload(const char* section, StatusOr<std::shared_ptr<Context>> loaded,
                    tls::ContextSlot<Context>& slot, ServerStats& stats) {
  if (!loaded.isOk()) {
    stats.tls_reload_failures.inc();
    std::fprintf(stderr, "ferry: TLS reload failed, keeping the last good files: %s\n",
                 loaded.status().message().c_str());
    return false;
  }
  slot.set(*loaded);
  stats.tls_reloads.inc();
  std::fprintf(stderr, "ferry: %s files reloaded\n", section);
  return true;
}

}  // namespace ferry::server
