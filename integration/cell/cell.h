#pragma once
// A cell: N Streams emulators (members inst-1..inst-N) and, optionally, one ferry in front of
// each, all on free loopback ports. Used as a GoogleTest helper, by benchmarks and by the
// ferry-cell binary.
//
//   auto cell = Cell::create({.members = 4});          // emulators only
//   ASSERT_TRUE(cell.isOk()) << cell.status().message();
//   uint16_t port = (*cell)->member(0).entryPort();     // ferry if present, else emulator
//   std::string owner = (*cell)->ownerOf("orders");     // same math as the emulators
//
// https mode (`.tls = true`, with ferries): urls.json names https://127.0.0.1:<ferry port>, every
// ferry's listener speaks TLS with a certificate from a test CA generated into the work dir and
// requires client certificates from it (mTLS between ferries); each ferry verifies its peers
// against that CA and presents its own client certificate (cell_tls.h). The emulators stay
// plain behind their ferries. Clients of the cell connect with clientTls().
//
// Ownership: the Cell owns every process it starts; ~Cell() (or stop()) stops ferries first,
// then emulators. Create and destroy a Cell on the same thread, one that outlives it (see
// process.h on PR_SET_PDEATHSIG).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "integration/cell/cell_tls.h"
#include "integration/harness/http_client.h"
#include "integration/harness/process.h"
#include "proxy/common/status.h"

namespace ferry::testing {

struct CellOptions {
  int members = 4;
  uint32_t shards = 16;
  std::string emulator_path;  // default: the streams-emulator built with this tree
  std::string ferry_path;     // empty: no ferries, urls.json points at the emulators
  std::string control_token = "cell-control-token";
  // Configs, urls.json and logs. Created when missing and kept; default: a fresh temp dir that
  // the cell removes when it is destroyed (FERRY_KEEP_TEST_DIRS=1 keeps it).
  std::string work_dir;
  std::vector<std::string> emulator_args;  // extra flags for every emulator
  double emulator_drain_seconds = 0;       // --drain-seconds (0: stop fast)
  std::vector<std::string> ferry_env;      // extra KEY=VALUE for every ferry
  int ferry_workers = 1;
  bool forwarding_enabled = true;
  bool tls = false;  // https mode (see above); needs ferry_path
  std::chrono::milliseconds start_timeout{15000};
};

struct CellMember {
  std::string name;  // inst-<i+1>
  uint16_t emulator_port = 0;
  uint16_t ferry_port = 0;        // 0 without ferries
  uint16_t ferry_admin_port = 0;  // 0 without ferries
  std::string ferry_config_path;  // empty without ferries
  // Where a client of the cell connects: the ferry when there is one, else the emulator.
  uint16_t entryPort() const { return ferry_port != 0 ? ferry_port : emulator_port; }
};

class Cell {
 public:
  static StatusOr<std::unique_ptr<Cell>> create(CellOptions options);
  ~Cell();
  Cell(const Cell&) = delete;
  Cell& operator=(const Cell&) = delete;

  size_t size() const { return members_.size(); }
  const CellMember& member(size_t i) const { return members_[i]; }
  const CellMember* memberByName(std::string_view name) const;
  const std::vector<std::string>& memberNames() const { return names_; }
  bool hasFerries() const { return !options_.ferry_path.empty(); }
  const std::string& urlsJsonPath() const { return urls_json_path_; }
  const std::string& workDir() const { return options_.work_dir; }
  const CellOptions& options() const { return options_; }
  // "https" in https mode, else "http": the scheme of urls.json and of the entry URLs.
  std::string scheme() const { return tls_ ? "https" : "http"; }
  // https mode: the generated files; nullptr for a plain cell.
  const CellTlsFiles* tlsFiles() const { return tls_ ? &*tls_ : nullptr; }
  // What a client of the cell connects to an entry port with: the cell CA and client
  // certificate in https mode, nullopt (plain) otherwise.
  std::optional<ClientTls> clientTls() const {
    return tls_ ? std::optional<ClientTls>(tls_->clientTls()) : std::nullopt;
  }

  // Ownership, computed with the emulators' code (integration/streams_emulator/ownership.h)
  // for the cell's member list and shard count.
  std::string ownerOf(std::string_view stream) const;
  size_t ownerIndexOf(std::string_view stream) const;
  std::string shardOf(std::string_view stream) const;
  // The first "<prefix>-<n>" (n = 0, 1, ...) owned by member `i`.
  std::string streamOwnedBy(size_t i, std::string_view prefix = "stream") const;

  Process& emulatorProcess(size_t i) { return *emulators_[i]; }
  Process* ferryProcess(size_t i) { return i < ferries_.size() ? ferries_[i].get() : nullptr; }

  // POST /v1/debug/control to member `i`'s emulator with the cell's token.
  StatusOr<HttpResponse> control(size_t i, std::string_view json);

  // One line per member, then the urls.json path (what ferry-cell prints).
  std::string describe() const;

  // Stops ferries, then emulators (SIGTERM all, then wait; SIGKILL after the grace period).
  void stop();

 private:
  explicit Cell(CellOptions options) : options_(std::move(options)) {}
  Status startEmulators();
  Status startFerries();
  Status waitForPeerTables();

  CellOptions options_;
  bool owns_work_dir_ = false;  // made by create(): removed by ~Cell
  std::vector<std::string> names_;
  std::vector<CellMember> members_;
  std::vector<std::unique_ptr<Process>> emulators_;
  std::vector<std::unique_ptr<Process>> ferries_;
  std::string urls_json_path_;
  std::optional<CellTlsFiles> tls_;
};

}  // namespace ferry::testing
