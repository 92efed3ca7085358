// ferry-demo: ferry's main job on an embedded default. Starts a local cell of N emulated
// Streams instances, each with a ferry in front, sends a short workload (create streams, then
// append to them) to RANDOM instances the way a load balancer would, and prints what the
// client saw and what the ferries forwarded. Exits 1 if the client saw a 409 or an error.
//
//   ferry-demo [--members 4] [--streams 16] [--appends 400] [--ferry PATH] [--seed N] [--tls]
//
// --tls: the cell's https mode (integration/cell/cell_tls.h): urls.json names the ferries'
// https listeners, ferries forward to each other over mTLS with a test CA, and this client
// talks https to the ferries (verifying them against that CA, with the cell's client
// certificate). Same workload, same summary.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "integration/cell/cell.h"
#include "integration/harness/http_client.h"

namespace {

using ferry::testing::Cell;
using ferry::testing::CellOptions;

struct Options {
  int members = 4;
  int streams = 16;
  int appends = 400;
  unsigned seed = 1;
  std::string ferry = FERRY_BIN;
  bool tls = false;
};

// Sums a Prometheus metric family (all label sets, or those containing `label_filter`).
double scrape(uint16_t admin_port, const std::string& name, const std::string& label_filter = "") {
  auto response = ferry::testing::httpRequest(admin_port, "GET", "/stats");
  if (!response.isOk()) return 0;
  double total = 0;
  size_t pos = 0;
  const std::string& text = response->body;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    if (line.compare(0, name.size(), name) != 0) continue;
    char next = line.size() > name.size() ? line[name.size()] : ' ';
    if (next != ' ' && next != '{') continue;
    if (!label_filter.empty() && line.find(label_filter) == std::string::npos) continue;
    total += std::atof(line.substr(line.rfind(' ') + 1).c_str());
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--tls") {
      opt.tls = true;
      continue;
    }
    const char* v = i + 1 < argc ? argv[++i] : "";
    if (flag == "--members")
      opt.members = std::atoi(v);
    else if (flag == "--streams")
      opt.streams = std::atoi(v);
    else if (flag == "--appends")
      opt.appends = std::atoi(v);
    else if (flag == "--seed")
      opt.seed = static_cast<unsigned>(std::atoi(v));
    else if (flag == "--ferry")
      opt.ferry = v;
    else {
      std::fprintf(stderr,
                   "usage: ferry-demo [--members N] [--streams N] [--appends N] "
                   "[--ferry PATH] [--seed N] [--tls]\n");
      return 2;
    }
  }

  CellOptions cell_options;
  cell_options.members = opt.members;
  cell_options.ferry_path = opt.ferry;
  cell_options.tls = opt.tls;
  auto cell = Cell::create(cell_options);
  if (!cell.isOk()) {
    std::fprintf(stderr, "ferry-demo: cannot start the cell: %s\n",
                 cell.status().message().c_str());
    return 1;
  }
  std::printf("A cell of %d emulated Streams instances, a ferry in front of each%s:\n%s\n",
              opt.members, opt.tls ? " (https, mTLS between ferries)" : "",
              (*cell)->describe().c_str());
  const std::optional<ferry::testing::ClientTls> client_tls = (*cell)->clientTls();

  std::mt19937 rng(opt.seed);
  std::uniform_int_distribution<int> pick_member(0, opt.members - 1);
  std::map<int, int> statuses;
  int local_answers = 0;
  int forwarded_answers = 0;
  int errors_shown = 0;
  auto send = [&](const std::string& method, const std::string& path, const std::string& body) {
    const auto& member = (*cell)->member(static_cast<size_t>(pick_member(rng)));
    auto response = ferry::testing::httpRequest(
        member.entryPort(), method, path, {{"content-type", "application/json"}}, body,
        std::chrono::seconds(10), client_tls ? &*client_tls : nullptr);
    if (!response.isOk() && errors_shown++ < 3) {
      std::fprintf(stderr, "ferry-demo: %s %s: %s\n", method.c_str(), path.c_str(),
                   response.status().message().c_str());
    }
    int status = response.isOk() ? response->status : 0;
    statuses[status]++;
    if (response.isOk() && response->header("streams-forwarded-to") != nullptr) {
      forwarded_answers++;
    } else {
      local_answers++;
    }
  };

  for (int s = 0; s < opt.streams; ++s) send("PUT", "/v1/stream/demo-" + std::to_string(s), "");
  std::uniform_int_distribution<int> pick_stream(0, opt.streams - 1);
  for (int a = 0; a < opt.appends; ++a) {
    send("POST", "/v1/stream/demo-" + std::to_string(pick_stream(rng)),
         "[{\"n\":" + std::to_string(a) + "}]");
  }

  std::printf("\nWorkload: %d creates and %d appends, each to a random instance.\n", opt.streams,
              opt.appends);
  std::printf("Client saw:");
  for (const auto& [status, count] : statuses) {
    std::printf("  %d x%d", status, count);
  }
  std::printf("\n  answered by the instance reached: %d, forwarded to the owner by ferry: %d\n",
              local_answers, forwarded_answers);
  std::printf("\n%-8s %10s %10s %10s %10s\n", "ferry", "forwarded", "completed", "skipped",
              "failed");
  double total_forwarded = 0;
  double handshakes_ok = 0;
  for (size_t i = 0; i < (*cell)->size(); ++i) {
    const auto& m = (*cell)->member(i);
    double attempts = scrape(m.ferry_admin_port, "ferry_forward_attempts_total");
    total_forwarded += attempts;
    handshakes_ok +=
        scrape(m.ferry_admin_port, "ferry_downstream_tls_handshakes_total", "outcome=\"ok\"");
    std::printf("%-8s %10.0f %10.0f %10.0f %10.0f\n", m.name.c_str(), attempts,
                scrape(m.ferry_admin_port, "ferry_forward_completed_total"),
                scrape(m.ferry_admin_port, "ferry_forward_skipped_total"),
                scrape(m.ferry_admin_port, "ferry_forward_failed_total"));
  }
  if (opt.tls) {
    std::printf("\nTLS handshakes accepted by the ferries' listeners (client and peers): %.0f\n",
                handshakes_ok);
  }
  int conflicts = statuses.count(409) ? statuses[409] : 0;
  int errors = 0;
  for (const auto& [status, count] : statuses) {
    if (status == 0 || status >= 500) errors += count;
  }
  std::printf("\nferries forwarded %.0f requests; the client saw %d x 409 and %d errors: %s\n",
              total_forwarded, conflicts, errors,
              conflicts == 0 && errors == 0 && total_forwarded > 0 ? "OK" : "FAILED");
  return conflicts == 0 && errors == 0 && total_forwarded > 0 ? 0 : 1;
}
