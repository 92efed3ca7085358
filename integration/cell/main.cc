// ferry-cell: starts a cell (N emulators, optionally N ferries), prints where everything
// listens, and stops everything on SIGINT / SIGTERM or when one of its processes dies.
//
//   ferry-cell [--members 4] [--shards 16] [--ferry /path/ferry] [--emulator /path/emu]
//              [--dir DIR] [--control-token T] [--emulator-arg FLAG]...
//
// Prints one line per member, the urls.json path, then "ferry-cell ready".
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "integration/cell/cell.h"

namespace {

int usage(const char* why) {
  fprintf(stderr,
          "ferry-cell: %s\nusage: ferry-cell [--members N] [--shards S] [--ferry PATH] "
          "[--emulator PATH] [--dir DIR] [--control-token T] [--emulator-arg FLAG]...\n",
          why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ferry::testing::CellOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) return usage("missing flag value");
    const char* v = argv[++i];
    if (flag == "--members")
      options.members = atoi(v);
    else if (flag == "--shards")
      options.shards = static_cast<uint32_t>(atoi(v));
    else if (flag == "--ferry")
      options.ferry_path = v;
    else if (flag == "--emulator")
      options.emulator_path = v;
    else if (flag == "--dir")
      options.work_dir = v;
    else if (flag == "--control-token")
      options.control_token = v;
    else if (flag == "--emulator-arg")
      options.emulator_args.push_back(v);
    else
      return usage("unknown flag");
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
