#include "integration/cell/cell.h"

#include <signal.h>

#include <filesystem>

#include "integration/cell/fleet_files.h"
#include "integration/streams_emulator/ownership.h"

#ifndef FERRY_STREAMS_EMULATOR_PATH
#define FERRY_STREAMS_EMULATOR_PATH "streams-emulator"
#endif

namespace ferry::testing {
namespace {

constexpr char kEmulatorListening[] = R"(^streams-emulator \S+ listening on 127\.0\.0\.1:(\d+)$)";
constexpr char kFerryReady[] =
    R"(^ferry ready listener=127\.0\.0\.1:(\d+) admin=127\.0\.0\.1:(\d+))";

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out.append(out.empty() ? "" : ",").append(s);
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<Cell>> Cell::create(CellOptions options) {
  if (options.members < 1) return invalidArgument("members: at least 1");
  if (!streams::isPowerOfTwo(options.shards)) return invalidArgument("shards: a power of two");
  if (options.tls && options.ferry_path.empty()) {
    return invalidArgument("tls: needs ferries (the emulators stay plain behind them)");
  }
  if (options.emulator_path.empty()) options.emulator_path = FERRY_STREAMS_EMULATOR_PATH;
  const bool make_work_dir = options.work_dir.empty();
  if (make_work_dir) {
    auto dir = makeTempDir("ferry-cell");
    if (!dir.isOk()) return dir.status();
    options.work_dir = *dir;
  } else {
    std::error_code error;
    std::filesystem::create_directories(options.work_dir, error);
    if (error) return invalidArgument("work dir " + options.work_dir + ": " + error.message());
  }
  std::unique_ptr<Cell> cell(new Cell(std::move(options)));
  cell->owns_work_dir_ = make_work_dir;
  for (int i = 1; i <= cell->options_.members; ++i) {
    cell->names_.push_back("inst-" + std::to_string(i));
    CellMember m;
    m.name = cell->names_.back();
    cell->members_.push_back(std::move(m));
  }
  cell->urls_json_path_ = cell->options_.work_dir + "/urls.json";
  Status s = cell->startEmulators();
  if (s.isOk() && cell->hasFerries()) s = cell->startFerries();
  if (!s.isOk()) return s;  // ~Cell stops whatever started
  if (!cell->hasFerries()) {
    std::vector<std::pair<std::string, uint16_t>> urls;
    for (const auto& m : cell->members_) urls.emplace_back(m.name, m.emulator_port);
    s = writeFileAtomically(cell->urls_json_path_, urlsJson(urls));
    if (!s.isOk()) return s;
  }
  return cell;
}

Status Cell::startEmulators() {
  const std::string members = joined(names_);
  // Start all, then wait for all: the start-up times overlap.
  for (const auto& m : members_) {
    ProcessOptions p;
    p.argv = {options_.emulator_path,
              "--name",
              m.name,
              "--members",
              members,
              "--shards",
              std::to_string(options_.shards),
              "--host",
              "127.0.0.1",
              "--port",
              "0",
              "--control-token",
              options_.control_token,
              "--drain-seconds",
              std::to_string(options_.emulator_drain_seconds)};
    p.argv.insert(p.argv.end(), options_.emulator_args.begin(), options_.emulator_args.end());
    p.name = "emulator-" + m.name;
    p.log_dir = options_.work_dir;
    auto proc = Process::start(std::move(p));
    if (!proc.isOk()) return proc.status();
    emulators_.push_back(std::move(*proc));
  }
  for (size_t i = 0; i < members_.size(); ++i) {
    auto line = emulators_[i]->waitForLine(kEmulatorListening, options_.start_timeout);
    if (!line.isOk()) {
      return unavailable(line.status().message() + "; stderr: " + emulators_[i]->stderrText());
    }
    members_[i].emulator_port = static_cast<uint16_t>(std::stoi(line->at(1)));
  }
  return Status::ok();
}

// The peer URLs in urls.json are the peers' FERRY listeners, not their instances. A forwarded
// request then reaches the owner's ferry, which sees Streams-Forwarded and passes it straight
// to its own instance (a marked request is never forwarded again). That is the deployment
// shape: in a fleet each instance is published at its sidecar, so forwarding inside the cell
// crosses the owner's sidecar like any other client request does, and its counters, access log
// and limits see the forwarded traffic too.
//
// The listeners bind port 0, so their ports are known only once the ferries printed them: the
// ferries start with a valid urls.json naming the emulators, and the final file (naming the
// ferries) replaces it atomically afterwards. ferry watches its fleet file; the cell also
// sends SIGHUP (reload now) and waits until every ferry's admin /peers lists the final URLs,
// so create() returns a cell whose peer tables are settled.
//
// https mode: the first urls.json already says https (allow_http_peers is off); its ports are
// the emulators' and nothing forwards before the final file replaces it.
Status Cell::startFerries() {
  if (options_.tls) {
    auto files = writeCellTls(options_.work_dir, names_);
    if (!files.isOk()) return files.status();
    tls_ = std::move(*files);
  }
  std::vector<std::pair<std::string, uint16_t>> urls;
  for (const auto& m : members_) urls.emplace_back(m.name, m.emulator_port);
  Status s = writeFileAtomically(urls_json_path_, urlsJson(urls, scheme()));
  if (!s.isOk()) return s;
  for (auto& m : members_) {
    m.ferry_config_path = options_.work_dir + "/ferry-" + m.name + ".yaml";
    FerryConfigParams params{.instance_name = m.name,
                             .emulator_port = m.emulator_port,
                             .fleet_file = urls_json_path_,
                             .workers = options_.ferry_workers,
                             .forwarding_enabled = options_.forwarding_enabled};
    if (tls_) {
      params.listener_tls = listenerTlsYaml(*tls_, m.name);
      params.forwarding_tls = forwardingTlsYaml(*tls_, m.name);
    }
    s = writeFileAtomically(m.ferry_config_path, ferryConfigYaml(params));
    if (!s.isOk()) return s;
    ProcessOptions p;
    p.argv = {options_.ferry_path, "--config", m.ferry_config_path};
    p.env = options_.ferry_env;
    p.name = "ferry-" + m.name;
    p.log_dir = options_.work_dir;
    auto proc = Process::start(std::move(p));
    if (!proc.isOk()) return proc.status();
    ferries_.push_back(std::move(*proc));
  }
  urls.clear();
  for (size_t i = 0; i < members_.size(); ++i) {
    auto line = ferries_[i]->waitForLine(kFerryReady, options_.start_timeout);
    if (!line.isOk()) {
      return unavailable(line.status().message() + "; stderr: " + ferries_[i]->stderrText());
    }
    members_[i].ferry_port = static_cast<uint16_t>(std::stoi(line->at(1)));
    members_[i].ferry_admin_port = static_cast<uint16_t>(std::stoi(line->at(2)));
    urls.emplace_back(members_[i].name, members_[i].ferry_port);
  }
  s = writeFileAtomically(urls_json_path_, urlsJson(urls, scheme()));
  if (!s.isOk()) return s;
  for (auto& f : ferries_) f->signal(SIGHUP);
  return waitForPeerTables();
}

Status Cell::waitForPeerTables() {
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  for (const auto& m : members_) {
    while (true) {
      auto peers = httpRequest(m.ferry_admin_port, "GET", "/peers");
      bool settled = peers.isOk() && peers->status == 200;
      for (const auto& other : members_) {
        const std::string url = scheme() + "://127.0.0.1:" + std::to_string(other.ferry_port);
        settled = settled && peers->body.find(url) != std::string::npos;
      }
      if (settled) break;
      if (std::chrono::steady_clock::now() > deadline) {
        return unavailable("ferry " + m.name + " did not load the final urls.json: " +
                           (peers.isOk() ? peers->body : peers.status().message()));
      }
      // The next check is a new request; the admin answers at once, so this loop waits on the
      // condition (the table version changing) rather than sleeping.
    }
  }
  return Status::ok();
}

Cell::~Cell() {
  stop();
  if (owns_work_dir_) removeTempDir(options_.work_dir);
}

void Cell::stop() {
  for (auto* group : {&ferries_, &emulators_}) {
    for (auto& p : *group) p->signal(SIGTERM);
    for (auto& p : *group) p->stop();  // waits (SIGKILL after the grace period)
  }
}

const CellMember* Cell::memberByName(std::string_view name) const {
  for (const auto& m : members_) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

size_t Cell::ownerIndexOf(std::string_view stream) const {
  return static_cast<size_t>(streams::ownerIndex(stream, options_.shards, names_));
}

std::string Cell::ownerOf(std::string_view stream) const { return names_[ownerIndexOf(stream)]; }

std::string Cell::shardOf(std::string_view stream) const {
  return streams::shardOf(stream, options_.shards);
}

std::string Cell::streamOwnedBy(size_t i, std::string_view prefix) const {
  for (int n = 0;; ++n) {
    std::string name = std::string(prefix) + "-" + std::to_string(n);
    if (ownerIndexOf(name) == i) return name;
  }
}

StatusOr<HttpResponse> Cell::control(size_t i, std::string_view json) {
  return httpRequest(
      members_[i].emulator_port, "POST", "/v1/debug/control",
      {{"x-control-token", options_.control_token}, {"content-type", "application/json"}}, json);
}

std::string Cell::describe() const {
  std::string out;
  for (const auto& m : members_) {
    out.append("ferry-cell member ").append(m.name);
    out.append(" emulator=127.0.0.1:").append(std::to_string(m.emulator_port));
    if (m.ferry_port != 0) {
      out.append(" ferry=127.0.0.1:").append(std::to_string(m.ferry_port));
      out.append(" admin=127.0.0.1:").append(std::to_string(m.ferry_admin_port));
    }
    out.append(" url=").append(scheme()).append("://127.0.0.1:");
    out.append(std::to_string(m.entryPort())).append("\n");
  }
  out.append("ferry-cell urls.json ").append(urls_json_path_).append("\n");
  if (tls_) {
    out.append("ferry-cell tls ca=").append(tls_->ca_file);
    out.append(" client_cert=").append(tls_->client_cert_file);
    out.append(" client_key=").append(tls_->client_key_file).append("\n");
  }
  return out;
}

}  // namespace ferry::testing
