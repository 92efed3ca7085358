#include "tests/integration/forwarding/support/forwarding_cell.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/sha.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "integration/cell/fleet_files.h"
#include "integration/harness/loopback.h"
#include "integration/streams_emulator/ownership.h"
#include "tests/support/stats/stats_lookup.h"

#ifndef FERRY_BIN
#define FERRY_BIN "ferry"
#endif
#ifndef EMULATOR_BIN
#define EMULATOR_BIN "streams-emulator"
#endif

namespace ferry::fwdtest {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kFerryReady[] =
    R"(^ferry ready listener=127\.0\.0\.1:(\d+) admin=127\.0\.0\.1:(\d+))";
constexpr char kEmulatorListening[] = R"(^streams-emulator \S+ listening on 127\.0\.0\.1:(\d+))";

std::string ferryYaml(const FerrySpec& s) {
  std::string y;
  y += "instance_name: " + s.instance_name + "\n";
  y += "listener: {address: 127.0.0.1, port: 0" +
       (s.listener_tls_yaml.empty() ? "" : ", tls: " + s.listener_tls_yaml) +
       (s.listener_http2 ? ", http2: {enabled: true}" : "") + "}\n";
  y += "local_instance: {address: 127.0.0.1, port: " + std::to_string(s.local_port) + "}\n";
  y += "admin: {address: 127.0.0.1, port: 0}\n";
  y += "workers: 1\n";
  y += "limits: {replay_buffer_bytes: " + std::to_string(s.replay_buffer_bytes) +
       (s.limits_extra_yaml.empty() ? "" : ", " + s.limits_extra_yaml) + "}\n";
  y += "forwarding: {enabled: true, fleet_file: " + s.fleet_file +
       ", allow_http_peers: " + (s.allow_http_peers ? "true" : "false") +
       ", watch_interval: " + s.watch_interval +
       (s.tls_yaml.empty() ? "" : ", tls: " + s.tls_yaml) +
       (s.forwarding_extra_yaml.empty() ? "" : ", " + s.forwarding_extra_yaml) +
       // Without a word from the test, routing off: the contract tests exercise the forwarding
       // path itself (owner_routing_test.cc turns it on).
       ", owner_routing: " +
       (s.owner_routing_yaml.empty() ? "{enabled: false}" : s.owner_routing_yaml) + "}\n";
  y += s.extra_yaml;
  return y;
}

}  // namespace

std::string url(uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

std::string renderUrlsJson(const PeerList& peers) {
  std::string out = "{";
  for (size_t i = 0; i < peers.size(); ++i) {
    if (i > 0) out += ",";
    out += "\"" + peers[i].first + "\":\"" + peers[i].second + "\"";
  }
  return out + "}\n";
}

std::string sha256Hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

// ---- Ferry ------------------------------------------------------------------------------------

StatusOr<std::unique_ptr<Ferry>> Ferry::start(const FerrySpec& spec) {
  std::unique_ptr<Ferry> f(new Ferry(spec));
  const std::string config = spec.log_dir + "/" + spec.log_name + ".yaml";
  Status s = writeFileAtomically(config, ferryYaml(spec));
  if (!s.isOk()) return s;
  testing::ProcessOptions p;
  p.argv = {FERRY_BIN, "--config", config};
  p.name = spec.log_name;
  p.log_dir = spec.log_dir;
  p.stop_grace = Ms(3000);
  auto proc = testing::Process::start(std::move(p));
  if (!proc.isOk()) return proc.status();
  f->process_ = std::move(*proc);
  auto line = f->process_->waitForLine(kFerryReady, kWait);
  if (!line.isOk()) {
    return unavailable(spec.log_name + ": " + line.status().message() +
                       "; stderr: " + f->process_->stderrText());
  }
  f->port_ = static_cast<uint16_t>(std::stoi(line->at(1)));
  f->admin_port_ = static_cast<uint16_t>(std::stoi(line->at(2)));
  return f;
}

Ferry::~Ferry() {
  if (process_) process_->stop();
}

StatusOr<HttpResponse> Ferry::admin(std::string_view path) {
  return testing::httpRequest(admin_port_, "GET", path, {}, {}, Ms(5000));
}

int64_t Ferry::stat(std::string_view series) {
  auto r = admin("/stats");
  if (!r.isOk() || r->status != 200) {
    ADD_FAILURE() << spec_.log_name << ": GET /stats failed reading " << series << ": "
                  << (r.isOk() ? "status " + std::to_string(r->status) : r.status().message());
    return testing::kNoSuchSeries;
  }
  return testing::expectSeries(r->body, series);
}

int64_t Ferry::waitForStat(std::string_view series, int64_t at_least, Ms timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    // A failed /stats is retried until the deadline; an unknown family fails the test at once.
    auto r = admin("/stats");
    if (r.isOk() && r->status == 200) {
      auto v = testing::seriesValue(r->body, series);
      if (!v.isOk()) {
        ADD_FAILURE() << v.status().message();
        return testing::kNoSuchSeries;
      }
      if (*v >= at_least || Clock::now() >= deadline) return *v;
    } else if (Clock::now() >= deadline) {
      return stat(series);  // fails the test, saying why
    }
  }
}

uint64_t Ferry::peersVersion() {
  auto r = admin("/peers");
  if (!r.isOk() || r->status != 200) return 0;
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  if (!d.IsObject() || !d.HasMember("version") || !d["version"].IsUint64()) return 0;
  return d["version"].GetUint64();
}

std::string Ferry::peersLastError() {
  auto r = admin("/peers");
  if (!r.isOk() || r->status != 200) return "";
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  if (!d.IsObject() || !d.HasMember("last_error") || !d["last_error"].IsString()) return "";
  return d["last_error"].GetString();
}

uint64_t Ferry::waitForPeersVersionAbove(uint64_t than, Ms timeout) {
  const auto deadline = Clock::now() + timeout;
  uint64_t v = peersVersion();
  while (v <= than && Clock::now() < deadline) {
    // A condition's poll interval: back to back, the polls took a core from the ferries.
    std::this_thread::sleep_for(Ms(5));
    v = peersVersion();
  }
  return v;
}

// ---- Emulator ---------------------------------------------------------------------------------

StatusOr<std::unique_ptr<Emulator>> Emulator::start(const std::string& name,
                                                    const std::string& members, uint32_t shards,
                                                    const std::string& log_dir,
                                                    const std::vector<std::string>& extra_args) {
  std::unique_ptr<Emulator> e(new Emulator());
  e->name_ = name;
  testing::ProcessOptions p;
  p.argv = {EMULATOR_BIN,
            "--name",
            name,
            "--members",
            members,
            "--shards",
            std::to_string(shards),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--control-token",
            kControlToken,
            "--drain-seconds",
            "0"};
  p.argv.insert(p.argv.end(), extra_args.begin(), extra_args.end());
  p.name = "emulator-" + name;
  p.log_dir = log_dir;
  p.stop_grace = Ms(3000);
  auto proc = testing::Process::start(std::move(p));
  if (!proc.isOk()) return proc.status();
  e->process_ = std::move(*proc);
  auto line = e->process_->waitForLine(kEmulatorListening, kWait);
  if (!line.isOk()) {
    return unavailable(name + ": " + line.status().message() +
                       "; stderr: " + e->process_->stderrText());
  }
  e->port_ = static_cast<uint16_t>(std::stoi(line->at(1)));
  return e;
}

Emulator::~Emulator() {
  if (process_) process_->stop();
}

bool Emulator::control(std::string_view json) {
  auto r = testing::httpRequest(
      port_, "POST", "/v1/debug/control",
      {{"x-control-token", kControlToken}, {"content-type", "application/json"}}, json);
  return r.isOk() && r->status == 200;
}

StatusOr<std::vector<Applied>> Emulator::applied(std::string_view stream) {
  auto r = testing::httpRequest(port_, "GET", "/v1/debug/applied?stream=" + std::string(stream),
                                {{"x-control-token", kControlToken}});
  if (!r.isOk()) return r.status();
  if (r->status != 200) return internalError("applied: status " + std::to_string(r->status));
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  if (!d.IsArray()) return internalError("applied: not an array: " + r->body);
  std::vector<Applied> out;
  for (const auto& a : d.GetArray()) {
    Applied x;
    x.bytes = a["bytes"].GetUint64();
    x.body_sha256 = a["body_sha256"].GetString();
    if (a["forwarded_by"].IsString()) x.forwarded_by = a["forwarded_by"].GetString();
    if (a["producer"].IsObject()) x.producer_id = a["producer"]["id"].GetString();
    out.push_back(std::move(x));
  }
  return out;
}

std::string Emulator::requests() {
  auto r = testing::httpRequest(port_, "GET", "/v1/debug/requests",
                                {{"x-control-token", kControlToken}});
  return r.isOk() ? r->body : "";
}

// ---- ForwardingCell ---------------------------------------------------------------------------

StatusOr<std::unique_ptr<ForwardingCell>> ForwardingCell::create(CellOptions options) {
  std::unique_ptr<ForwardingCell> cell(new ForwardingCell());
  cell->options_ = options;
  auto dir = testing::makeTempDir("ferry-forwarding");
  if (!dir.isOk()) return dir.status();
  cell->work_dir_ = *dir;
  std::string members;
  for (int i = 1; i <= options.members; ++i) {
    cell->names_.push_back("inst-" + std::to_string(i));
    members += (i > 1 ? "," : "") + cell->names_.back();
  }
  if (isTls(options.transport)) {
    auto files = testing::writeCellTls(cell->work_dir_, cell->names_);
    if (!files.isOk()) return files.status();
    cell->tls_ = std::move(*files);
    cell->client_tls_ = cell->tls_->clientTls();
  }
  for (const auto& n : cell->names_) {
    auto e = Emulator::start(n, members, options.shards, cell->work_dir_, options.emulator_args);
    if (!e.isOk()) return e.status();
    cell->emulators_.push_back(std::move(*e));
  }
  // First tables name the emulators: valid, so every ferry starts (in a kTls cell with https
  // URLs that nothing uses before the final table replaces them).
  PeerList first;
  for (size_t i = 0; i < cell->size(); ++i) {
    first.emplace_back(cell->names_[i], cell->peerUrl(cell->emulators_[i]->port()));
  }
  for (size_t i = 0; i < cell->size(); ++i) {
    cell->fleet_files_.push_back(cell->work_dir_ + "/urls-" + cell->names_[i] + ".json");
    Status s = writeFileAtomically(cell->fleet_files_[i], renderUrlsJson(first));
    if (!s.isOk()) return s;
    FerrySpec spec;
    spec.instance_name = cell->names_[i];
    spec.local_port = cell->emulators_[i]->port();
    spec.fleet_file = cell->fleet_files_[i];
    spec.replay_buffer_bytes = options.replay_buffer_bytes;
    spec.watch_interval = options.watch_interval;
    spec.log_dir = cell->work_dir_;
    spec.log_name = "ferry-" + cell->names_[i];
    spec.owner_routing_yaml = options.owner_routing_yaml;
    spec.extra_yaml = options.ferry_extra_yaml;
    spec.limits_extra_yaml = options.limits_extra_yaml;
    cell->applyTransport(spec);
    auto f = Ferry::start(spec);
    if (!f.isOk()) return f.status();
    cell->ferries_.push_back(std::move(*f));
  }
  // Final tables name the ferries; SIGHUP reloads at once (the watcher would too).
  const std::string final_json = renderUrlsJson(cell->peers());
  for (size_t i = 0; i < cell->size(); ++i) {
    const uint64_t before = cell->ferries_[i]->peersVersion();
    Status s = cell->writeFleetFile(i, final_json);
    if (!s.isOk()) return s;
    cell->ferries_[i]->process().signal(SIGHUP);
    if (cell->ferries_[i]->waitForPeersVersionAbove(before) <= before) {
      return unavailable(cell->names_[i] + ": final peer table not loaded");
    }
  }
  return cell;
}

ForwardingCell::~ForwardingCell() {
  stop();
  testing::removeTempDir(work_dir_);
}

void ForwardingCell::stop() {
  extra_ferries_.clear();
  ferries_.clear();
  emulators_.clear();
}

PeerList ForwardingCell::peers() const {
  PeerList out;
  for (size_t i = 0; i < names_.size(); ++i) {
    out.emplace_back(names_[i], peerUrl(ferries_[i]->port()));
  }
  return out;
}

std::string ForwardingCell::peerUrl(uint16_t port) const {
  return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port);
}

void ForwardingCell::applyTransport(FerrySpec& spec) const {
  // The owner side (issue 13): every ferry of the cell forwards with the cell's protocol.
  if (spec.forwarding_extra_yaml.empty()) {
    std::string protocol = options_.owner_protocol;
    if (protocol.empty()) {
      protocol = !ownerHttp2(options_.transport) ? "http1" : isTls(options_.transport) ? "" : "h2";
    }
    std::string extra = options_.forwarding_extra_yaml;
    if (!protocol.empty()) {
      extra = "owner_protocol: " + protocol + (extra.empty() ? "" : ", " + extra);
    }
    spec.forwarding_extra_yaml = extra;
  }
  // An HTTP/2 cell: every listener serves HTTP/2 too (its clients speak it, or its ferries
  // forward with it).
  if (isHttp2(options_.transport) || ownerHttp2(options_.transport)) spec.listener_http2 = true;
  if (!tls_ || !spec.listener_tls_yaml.empty() || !spec.tls_yaml.empty()) return;
  spec.listener_tls_yaml = testing::listenerTlsYaml(*tls_, spec.instance_name);
  spec.tls_yaml = testing::forwardingTlsYaml(*tls_, spec.instance_name);
  spec.allow_http_peers = false;
}

Status ForwardingCell::writeFleetFile(size_t i, const std::string& content) {
  return writeFileAtomically(fleet_files_[i], content);
}

StatusOr<Ferry*> ForwardingCell::startExtraFerry(FerrySpec spec) {
  if (spec.log_dir.empty()) spec.log_dir = work_dir_;
  if (spec.log_name.empty()) {
    spec.log_name = "ferry-extra-" + std::to_string(extra_ferries_.size());
  }
  applyTransport(spec);
  auto f = Ferry::start(spec);
  if (!f.isOk()) return f.status();
  extra_ferries_.push_back(std::move(*f));
  return extra_ferries_.back().get();
}

size_t ForwardingCell::ownerIndexOf(std::string_view stream) const {
  return static_cast<size_t>(streams::ownerIndex(stream, options_.shards, names_));
}

std::string ForwardingCell::streamOwnedBy(size_t i, std::string_view prefix) const {
  for (int n = 0;; ++n) {
    std::string s = std::string(prefix) + "-" + std::to_string(n);
    if (ownerIndexOf(s) == i) return s;
  }
}

// ---- CannedUpstream ---------------------------------------------------------------------------

CannedUpstream::CannedUpstream(std::string response) : response_(std::move(response)) {
  listen_fd_ = testing::listenOnLoopback(port_);
  if (pipe2(wake_fd_, O_CLOEXEC) != 0) wake_fd_[0] = wake_fd_[1] = -1;
  thread_ = std::thread([this] { run(); });
}

CannedUpstream::~CannedUpstream() {
  if (wake_fd_[1] >= 0) (void)!write(wake_fd_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  for (int fd : {listen_fd_, wake_fd_[0], wake_fd_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void CannedUpstream::run() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    // Read the head and a Content-Length body (the tests send small ones), then answer.
    std::string in;
    char buf[4096];
    size_t head_end = std::string::npos;
    size_t need = 0;
    while (true) {
      pollfd p[2] = {{fd, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
      if (poll(p, 2, 5000) <= 0 || p[1].revents != 0) break;
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
      if (head_end == std::string::npos) {
        head_end = in.find("\r\n\r\n");
        if (head_end == std::string::npos) continue;
        std::string head = in.substr(0, head_end);
        for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        size_t cl = head.find("\ncontent-length:");
        need = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
      }
      if (in.size() >= head_end + 4 + need) {
        ++requests_;
        size_t off = 0;
        while (off < response_.size()) {
          ssize_t w = write(fd, response_.data() + off, response_.size() - off);
          if (w <= 0) break;
          off += static_cast<size_t>(w);
        }
        break;
      }
    }
    ::close(fd);
  }
}

uint16_t closedPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin));
  socklen_t len = sizeof(sin);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len);
  ::close(fd);
  return ntohs(sin.sin_port);
}

}  // namespace ferry::fwdtest
