// streams-emulator: a Streams instance for tests and benchmarks (see README.md).
// Prints exactly one line when it listens:
//   streams-emulator <name> listening on 127.0.0.1:<port>
#include <event2/event.h>

#include <csignal>
#include <cstdio>
#include <string_view>

#include "integration/streams_emulator/emulator.h"

namespace {

void onSignal(evutil_socket_t sig, short, void* ctx) {
  auto* emulator = static_cast<ferry::streams::Emulator*>(ctx);
  if (sig == SIGUSR1) {
    emulator->clearKnobs();
  } else {
    emulator->startDrain();
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      fputs(ferry::streams::usage(), stdout);
      return 0;
    }
  }
  auto options = ferry::streams::parseOptions(argc, argv);
  if (!options.isOk()) {
    fprintf(stderr, "streams-emulator: %s\n%s", options.status().message().c_str(),
            ferry::streams::usage());
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  event_base* base = event_base_new();
  int rc = 0;
  {
    ferry::streams::Emulator emulator(base, *options);
    auto replayed = emulator.openJournal();
    if (!replayed.isOk()) {
      fprintf(stderr, "streams-emulator: %s\n", replayed.status().message().c_str());
      return 1;
    }
    if (!options->journal.empty()) {
      fprintf(stderr, "streams-emulator: journal %s: %zu records replayed\n",
              options->journal.c_str(), *replayed);
    }
    auto port = emulator.listen();
    if (!port.isOk()) {
      fprintf(stderr, "streams-emulator: %s\n", port.status().message().c_str());
      return 1;
    }
    event* term = evsignal_new(base, SIGTERM, &onSignal, &emulator);
    event* intr = evsignal_new(base, SIGINT, &onSignal, &emulator);
    event* usr1 = evsignal_new(base, SIGUSR1, &onSignal, &emulator);
    evsignal_add(term, nullptr);
    evsignal_add(intr, nullptr);
    evsignal_add(usr1, nullptr);
    auto tls_port = emulator.listenTls();
    if (!tls_port.isOk()) {
      fprintf(stderr, "streams-emulator: %s\n", tls_port.status().message().c_str());
      return 1;
    }
    printf("streams-emulator %s listening on %s:%u\n", options->name.c_str(), options->host.c_str(),
           static_cast<unsigned>(*port));
    if (*tls_port != 0) {
      printf("streams-emulator %s listening tls on %s:%u\n", options->name.c_str(),
             options->host.c_str(), static_cast<unsigned>(*tls_port));
    }
    fflush(stdout);
    if (event_base_dispatch(base) < 0) rc = 1;
    event_free(term);
    event_free(intr);
    event_free(usr1);
  }
  event_base_free(base);
  return rc;
}
