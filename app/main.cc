// ferry: an L7 sidecar proxy in front of a Streams instance, with owner forwarding.
//   ferry --config ferry.yaml             serve
//   ferry --validate --config ferry.yaml  check the config, print OK or every error; exit 0/1
//   ferry --version | --help

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "app/config_check.h"
#include "app/config_endpoint.h"
#include "app/filter_setup.h"
#include "app/server.h"
#include "config/config_loader.h"
#include "proxy/access_log/access_log.h"
#include "proxy/event/block_cache.h"
#include "proxy/server/allocator.h"
#include "proxy/server/build_flavor.h"
#include "proxy/server/fd_limit.h"
#include "proxy/server/version.h"
#include "proxy/tls/library_version.h"

namespace {

using ferry::server::kVersion;

void printHelp() {
  std::printf(
      "usage: ferry --config FILE [--validate]\n"
      "       ferry --version | --help\n\n"
      "  --config FILE   YAML configuration (see config/examples/ferry.yaml)\n"
      "  --validate      check FILE and the fleet file it names; print OK or every error\n"
      "                  with its key path; exit 0 when valid, 1 otherwise. No network.\n"
      "  --version       print the version\n\n"
      "signals: SIGTERM/SIGINT drain and exit (as admin POST /drain does: /ready fails,\n"
      "timeouts.drain_delay, then timeouts.drain for in-flight requests); SIGHUP reloads the\n"
      "fleet file and the forwarding.tls and listener.tls files.\n");
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything uses libevent: its 1 KiB buffer blocks come from a per-thread cache.
  ferry::event::installBufferBlockCache();
  std::string config_path;
  bool validate = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      printHelp();
      return 0;
    }
    if (arg == "--version") {
      std::printf("ferry %s (tls: %s, allocator: %s, build: %s)\n", kVersion,
                  ferry::tls::libraryVersion(), ferry::server::allocatorName().c_str(),
                  ferry::server::buildFlavor());
      return 0;
    }
    if (arg == "--validate") {
      validate = true;
    } else if (arg == "--config" && i + 1 < argc) {
      config_path = argv[++i];
    } else if (arg.rfind("--config=", 0) == 0) {
      config_path = arg.substr(9);
    } else {
      std::fprintf(stderr, "ferry: unknown argument '%s' (try --help)\n", arg.c_str());
      return 2;
    }
  }
  if (config_path.empty()) {
    std::fprintf(stderr, "ferry: --config FILE is required (try --help)\n");
    return 2;
  }
  ferry::config::LoadResult loaded = ferry::app::loadConfigFile(config_path);
  if (!loaded.ok()) {
    for (const auto& error : loaded.errors) {
      std::fprintf(validate ? stdout : stderr, "%s\n", error.toString().c_str());
    }
    if (!validate) std::fprintf(stderr, "ferry: invalid config, not starting\n");
    return 1;
  }
  if (!loaded.config->forwarding.tls.verify) {
    std::fprintf(stderr,
                 "ferry: WARNING: forwarding.tls.verify is false: owners' certificates and names "
                 "are NOT checked; anyone on the path can impersonate an owner and read or "
                 "change forwarded requests. Use only for tests.\n");
  }
  if (loaded.config->fault.enabled) {
    std::fprintf(stderr,
                 "ferry: WARNING: fault injection is on: requests carrying the header %s are "
                 "aborted (%u%%, status %u) or delayed (%u%%) on purpose. Use only for tests.\n",
                 loaded.config->fault.header.c_str(), loaded.config->fault.abort.percent,
                 loaded.config->fault.abort.status, loaded.config->fault.delay.percent);
  }
  if (validate) {
    // What start-up would refuse beyond the YAML itself.
    ferry::Status log = ferry::access_log::AccessLog::checkWritable(loaded.config->access_log);
    if (!log.isOk()) {
      std::printf("%s\n", log.message().c_str());
      return 1;
    }
    std::printf("OK\n");
    return 0;
  }

  // Before any socket is opened: the descriptor budget every connection draws on.
  const ferry::server::FdLimits fd_limits = ferry::server::raiseFdLimit();
  const auto& config = *loaded.config;
  const uint32_t workers =
      config.workers != 0 ? config.workers : std::max(1u, std::thread::hardware_concurrency());
  const std::string fd_warning = ferry::server::fdBudgetWarning(
      fd_limits,
      ferry::server::descriptorsNeeded(config.limits.max_connections, workers,
                                       config.admin.max_connections),
      config.limits.max_connections);
  if (!fd_warning.empty()) std::fprintf(stderr, "%s\n", fd_warning.c_str());

  ferry::app::Server server(*loaded.config);
  ferry::app::FilterSetup filters(server, *loaded.config);
  ferry::Status prepared = filters.prepare();
  if (!prepared.isOk()) {
    std::fprintf(stderr, "ferry: %s\n", prepared.message().c_str());
    return 1;
  }
  ferry::Status started = server.start();
  if (!started.isOk()) {
    std::fprintf(stderr, "ferry: %s\n", started.message().c_str());
    return 1;
  }
  filters.attach();
  if (loaded.config->batched_writes && !server.batchesWrites()) {
    std::fprintf(stderr,
                 "ferry: batched_writes: io_uring is not usable here (kernel or seccomp profile); "
                 "each socket is written on its own\n");
  }
  ferry::app::addConfigEndpoint(server, config, workers);
  std::printf("ferry ready listener=%s:%u admin=%s:%u\n", loaded.config->listener.host.c_str(),
              server.listenerPort(), loaded.config->admin.host.c_str(), server.adminPort());
  std::fflush(stdout);
  return server.run();
}
