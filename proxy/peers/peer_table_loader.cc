#include "proxy/peers/peer_table_loader.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <ctime>

namespace ferry::peers {

namespace {
std::string isoTime(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char out[32];
  std::strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}
}  // namespace

PeerTableLoader::PeerTableLoader(event::Dispatcher& main, const PeerTableSource& source,
                                 PeerTableProvider& provider, stats::Store& stats,
                                 HostResolver resolver)
    : main_(main),
      source_(source),
      provider_(provider),
      reloads_(stats.counter("ferry_peer_table_reloads_total", "Peer tables loaded")),
      reload_failures_(stats.counter("ferry_peer_table_reload_failures_total",
                                     "Peer table loads that failed (last good table kept)")),
      version_gauge_(stats.gauge("ferry_peer_table_version", "Version of the current peer table")),
      size_gauge_(stats.gauge("ferry_peer_table_peers", "Peers in the current peer table")),
      resolve_failures_(stats.counter("ferry_peer_resolve_failures_total",
                                      "Peer hostnames that did not resolve at a table load")),
      resolver_(std::move(resolver)) {}

StatusOr<std::map<std::string, PeerOrigin>> PeerTableLoader::readSource() {
  auto peers = source_.fleet_file.empty() ? parsePeerMap(source_.peers, source_.policy)
                                          : loadFleetFile(source_.fleet_file, source_.policy);
  if (peers.isOk()) resolveAddresses(*peers);
  return peers;
}

void PeerTableLoader::resolveAddresses(std::map<std::string, PeerOrigin>& peers) {
  for (auto& [name, origin] : peers) {
    if (origin.host == "localhost" || isIpLiteral(origin.host)) continue;
    std::optional<std::string> address = resolver_(origin.host);
    if (address) {
      origin.address = *address;
      continue;
    }
    resolve_failures_.inc();
    std::fprintf(stderr, "ferry: peer %s: host %s does not resolve; forwards to it keep the 409\n",
                 name.c_str(), origin.host.c_str());
  }
}

Status PeerTableLoader::start() {
  fileChanged();  // remember the file's identity before the first read
  auto peers = readSource();
  if (!peers.isOk()) return peers.status();
  publish(std::move(*peers));
  if (!source_.fleet_file.empty()) {
    watch_timer_ = main_.createTimer([this] { check(); });
    watch_timer_->enable(source_.watch_interval);
  }
  return Status::ok();
}

void PeerTableLoader::publish(std::map<std::string, PeerOrigin> peers) {
  size_t size = peers.size();
  provider_.publish(std::make_shared<const PeerTable>(std::move(peers), ++version_));
  loaded_at_ = std::chrono::system_clock::now();
  read_at_ = loaded_at_;
  reloads_.inc();
  version_gauge_.set(static_cast<int64_t>(version_));
  size_gauge_.set(static_cast<int64_t>(size));
}

bool PeerTableLoader::fileChanged() {
  if (source_.fleet_file.empty()) return false;
  struct stat now {};
  if (::stat(source_.fleet_file.c_str(), &now) != 0) {
    // Gone or unreadable: worth a (failing) reload once, so the reason is reported.
    bool changed = have_stat_;
    have_stat_ = false;
    return changed;
  }
  bool changed = !have_stat_ || now.st_size != last_stat_.st_size ||
                 now.st_ino != last_stat_.st_ino ||
                 now.st_mtim.tv_sec != last_stat_.st_mtim.tv_sec ||
                 now.st_mtim.tv_nsec != last_stat_.st_mtim.tv_nsec;
  last_stat_ = now;
  have_stat_ = true;
  return changed;
}

void PeerTableLoader::check() {
  if (fileChanged()) reload();
  watch_timer_->enable(source_.watch_interval);
}

void PeerTableLoader::reload() {
  auto peers = readSource();
  if (!peers.isOk()) {
    reload_failures_.inc();
    last_error_ = peers.status().message();
    last_error_at_ = std::chrono::system_clock::now();
    std::fprintf(stderr, "ferry: peer table not reloaded, keeping version %llu: %s\n",
                 static_cast<unsigned long long>(version_), last_error_.c_str());
    return;
  }
  // A good read ends an earlier error even when the table is the same (an operator who fixed
  // the file must see that it is good again: in /peers and in the log).
  const bool recovered = !last_error_.empty();
  last_error_.clear();
  read_at_ = std::chrono::system_clock::now();
  auto current = provider_.latest();
  if (current && current->peers() == *peers) {
    if (recovered) {
      std::fprintf(stderr, "ferry: peer table source is valid again, unchanged (version %llu)\n",
                   static_cast<unsigned long long>(version_));
    }
    return;  // same table: nothing to publish
  }
  publish(std::move(*peers));
  std::fprintf(stderr, "ferry: peer table version %llu loaded (%zu peers)\n",
               static_cast<unsigned long long>(version_), provider_.latest()->size());
}

std::string PeerTableLoader::renderJson() const {
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w(out);
  auto table = provider_.latest();
  w.StartObject();
  w.Key("version");
  w.Uint64(version_);
  w.Key("source");
  w.String(source_.fleet_file.empty() ? "inline" : source_.fleet_file.c_str());
  w.Key("loaded_at");
  w.String(isoTime(loaded_at_).c_str());
  w.Key("read_at");  // the last good read of the source, whether or not the table changed
  w.String(isoTime(read_at_).c_str());
  w.Key("last_error");
  if (last_error_.empty()) {
    w.Null();
  } else {
    w.String(last_error_.c_str());
  }
  w.Key("last_error_at");
  if (last_error_.empty()) {
    w.Null();
  } else {
    w.String(isoTime(last_error_at_).c_str());
  }
  w.Key("peers");
  w.StartObject();
  if (table) {
    for (const auto& [name, origin] : table->peers()) {
      w.Key(name.c_str());
      w.String(origin.origin().c_str());
    }
  }
  w.EndObject();
  w.Key("addresses");  // what hostnames resolved to at the last load
  w.StartObject();
  if (table) {
    for (const auto& [name, origin] : table->peers()) {
      if (origin.address.empty()) continue;
      w.Key(name.c_str());
      w.String(origin.address.c_str());
    }
  }
  w.EndObject();
  w.EndObject();
  return out.GetString();
}

}  // namespace ferry::peers
