// ferry-cell: starts a cell (N emulators, optionally N ferries), prints where everything
// listens, and stops everything on SIGINT / SIGTERM or when one of its processes dies.
//
//   ferry-cell [--members 4] [--shards 16] [--ferry /path/ferry] [--emulator /path/emu]
//              [--dir DIR] [--control-token T] [--emulator-arg FLAG]... [--tls]
//
// Prints one line per member, the urls.json path (and with --tls the CA and client
// certificate files), then "ferry-cell ready".
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "integration/cell/cell.h"

namespace {

constexpr const char* kUsage =
    "usage: ferry-cell [--members N] [--shards S] [--ferry PATH] [--emulator PATH] [--dir DIR]\n"
    "                  [--control-token T] [--emulator-arg FLAG]... [--tls]\n"
    "  --members N        emulated Streams instances inst-1..inst-N (default 4)\n"
    "  --shards S         shard count, a power of two (default 16)\n"
    "  --ferry PATH       a ferry in front of every instance (default: none, emulators only)\n"
    "  --emulator PATH    the streams-emulator binary (default: the one built with this tree)\n"
    "  --dir DIR          configs, urls.json and logs; created when missing and kept\n"
    "                     (default: a temporary folder removed on exit)\n"
    "  --control-token T  X-Control-Token of the emulators' /v1/debug routes\n"
    "  --emulator-arg F   one more flag for every emulator (repeatable)\n"
    "  --tls              https cell (needs --ferry): a test CA and certificates in DIR/tls,\n"
    "                     urls.json names https://127.0.0.1:<ferry port>, every ferry's listener\n"
    "                     speaks TLS and requires a client certificate (mTLS between ferries);\n"
    "                     clients use DIR/tls/ca.pem, client.pem and client.key\n"
    "Prints each member's ports and the urls.json path, then \"ferry-cell ready\";\n"
    "SIGINT/SIGTERM stops everything.\n";

int usage(const char* why) {
  fprintf(stderr, "ferry-cell: %s\n%s", why, kUsage);
  return 2;
}

bool parsePositive(const char* text, long max, long& out) {
  char* end = nullptr;
  out = strtol(text, &end, 10);
  return end != text && *end == '\0' && out > 0 && out <= max;
}

}  // namespace

int main(int argc, char** argv) {
  ferry::testing::CellOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      fputs(kUsage, stdout);
      return 0;
    }
    if (flag == "--tls") {
      options.tls = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("missing value for " + std::string(flag)).c_str());
    const char* v = argv[++i];
    long n = 0;
    if (flag == "--members") {
      if (!parsePositive(v, 64, n)) return usage("--members: expected 1..64");
      options.members = static_cast<int>(n);
    } else if (flag == "--shards") {
      if (!parsePositive(v, 1 << 20, n)) return usage("--shards: expected a power of two");
      options.shards = static_cast<uint32_t>(n);
    } else if (flag == "--ferry") {
      options.ferry_path = v;
    } else if (flag == "--emulator") {
      options.emulator_path = v;
    } else if (flag == "--dir") {
      options.work_dir = v;
    } else if (flag == "--control-token") {
      options.control_token = v;
    } else if (flag == "--emulator-arg") {
      options.emulator_args.push_back(v);
    } else {
      return usage(("unknown flag " + std::string(flag)).c_str());
    }
  }

  // Block the signals before any thread starts, so that every thread inherits the mask and
  // sigwait() below receives them (children get a clean mask, see process.cc).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto cell = ferry::testing::Cell::create(options);
  if (!cell.isOk()) {
    fprintf(stderr, "ferry-cell: %s\n", cell.status().message().c_str());
    return 1;
  }
  printf("%sferry-cell ready\n", (*cell)->describe().c_str());
  fflush(stdout);

  int rc = 0;
  while (true) {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig != SIGCHLD) break;
    bool died = false;
    for (size_t i = 0; i < (*cell)->size(); ++i) {
      if (!(*cell)->emulatorProcess(i).running()) {
        fprintf(stderr, "ferry-cell: emulator %s exited\n", (*cell)->member(i).name.c_str());
        died = true;
      }
      auto* ferry = (*cell)->ferryProcess(i);
      if (ferry != nullptr && !ferry->running()) {
        fprintf(stderr, "ferry-cell: ferry %s exited\n", (*cell)->member(i).name.c_str());
        died = true;
      }
    }
    if (died) {
      rc = 1;
      break;
    }
  }
  (*cell)->stop();
  return rc;
}
