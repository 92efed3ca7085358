#pragma once
// Test support for the owner-forwarding integration tests (docs/forwarding.md): real
// streams-emulator and ferry processes on 127.0.0.1, port 0, each ferry with its own fleet file
// so a test can give one ferry a different peer table (an unknown owner, a refusing owner, a
// bad publication) without touching the others.
//
//   auto cell = ForwardingCell::create({.members = 3});
//   std::string s = (*cell)->streamOwnedBy(1);        // owned by inst-2
//   httpRequest((*cell)->ferry(0).port(), "POST", "/v1/stream/" + s, {}, "x");  // forwarded
//
// Peer URLs name the peers' FERRY listeners (the deployment shape; integration/cell does the
// same): a forward crosses the owner's ferry, which passes the marked request to its instance.
// The ferries' ports are known only once they printed them, so each ferry starts with a fleet
// file naming the emulators and the final one replaces it (atomic rename) before create()
// returns; create() waits until every /peers lists the final URLs.
//
// Transport: kPlain (http peer URLs, plain listeners) or kTls, the https cell of
// integration/cell (cell_tls.h, same generator and YAML): the peer URLs are https, every
// ferry's listener speaks TLS with a certificate from a test CA and requires a client
// certificate from it, and every ferry forwards with its own client certificate (mTLS between
// ferries). Clients of the cell then talk https too (clientTls()); the admin listeners and the
// emulators stay plain.
//
// Everything is stopped by the destructor: ferries first, then emulators. Create and destroy a
// ForwardingCell on the test's main thread (the harness kills children when their starting
// thread dies).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "integration/cell/cell_tls.h"
#include "integration/cell/fleet_files.h"
#include "integration/harness/http_client.h"
#include "integration/harness/process.h"
#include "proxy/common/status.h"

namespace ferry::fwdtest {

using testing::Headers;
using testing::HttpClient;
using testing::HttpResponse;
using Ms = std::chrono::milliseconds;

inline constexpr char kControlToken[] = "forwarding-test-token";
// Deadline for conditions the tests wait on (a stat reaching a value, a table reloading).
inline constexpr Ms kWait{10000};

// A name -> URL map rendered as the fleet's urls.json (member order kept).
using PeerList = std::vector<std::pair<std::string, std::string>>;
std::string renderUrlsJson(const PeerList& peers);
std::string url(uint16_t port);
// Writes `path` atomically (temporary file renamed over it): the cell launcher's own.
using ferry::testing::writeFileAtomically;
// Lower-case hex SHA-256.
std::string sha256Hex(std::string_view data);

struct FerrySpec {
  std::string instance_name;
  uint16_t local_port = 0;  // the instance ferry fronts
  std::string fleet_file;   // absolute path; must hold a valid table at start
  uint32_t replay_buffer_bytes = 65536;
  std::string watch_interval = "200ms";
  std::string log_dir;
  std::string log_name;  // process log stem
  bool allow_http_peers = true;
  std::string tls_yaml;    // flow-map value of forwarding.tls, e.g. "{ca_file: /x.pem}"
  std::string extra_yaml;  // top-level keys appended, e.g. "upstream: {max_connections: 1}\n"
  std::string limits_extra_yaml;      // more limits keys, e.g. "buffer_high_watermark_bytes: 16384"
  std::string forwarding_extra_yaml;  // more forwarding keys, e.g. "owner_protocol: h2"
  std::string listener_tls_yaml;      // flow-map value of listener.tls (empty: plain listener)
  bool listener_http2 = false;        // listener.http2.enabled: true (h2c / ALPN h2 served too)
  std::string owner_routing_yaml;     // flow-map value of forwarding.owner_routing (empty: off)
};

// One ferry process.
class Ferry {
 public:
  static StatusOr<std::unique_ptr<Ferry>> start(const FerrySpec& spec);
  ~Ferry();

  uint16_t port() const { return port_; }
  uint16_t adminPort() const { return admin_port_; }
  const FerrySpec& spec() const { return spec_; }
  testing::Process& process() { return *process_; }

  // GET `path` on the admin listener.
  StatusOr<HttpResponse> admin(std::string_view path);
  // The value of one /stats series, given as the exact text before the value, e.g.
  // `ferry_forward_skipped_total{reason="marked"}`. 0 when ferry exports the family but not
  // the series (a per-owner series appears on first use). A family ferry does not export (a
  // misspelt name) or a failed /stats fails the test (tests/support/stats/stats_lookup.h).
  int64_t stat(std::string_view series);
  // Polls /stats until stat(series) >= at_least (not a sleep: each poll is a new request).
  // The last value seen, which the caller compares; an unknown family fails the test at once.
  int64_t waitForStat(std::string_view series, int64_t at_least, Ms timeout = kWait);
  // /peers "version" (0 on error) and "last_error" ("" when null).
  uint64_t peersVersion();
  std::string peersLastError();
  // Polls /peers until version > `than`; the version seen last.
  uint64_t waitForPeersVersionAbove(uint64_t than, Ms timeout = kWait);

 private:
  explicit Ferry(FerrySpec spec) : spec_(std::move(spec)) {}
  FerrySpec spec_;
  std::unique_ptr<testing::Process> process_;
  uint16_t port_ = 0;
  uint16_t admin_port_ = 0;
};

// One applied append from the emulator's GET /v1/debug/applied.
struct Applied {
  uint64_t bytes = 0;
  std::string body_sha256;
  std::string forwarded_by;  // "" when null
  std::string producer_id;   // "" when null
};

// One streams-emulator process.
class Emulator {
 public:
  static StatusOr<std::unique_ptr<Emulator>> start(const std::string& name,
                                                   const std::string& members, uint32_t shards,
                                                   const std::string& log_dir,
                                                   const std::vector<std::string>& extra_args = {});
  ~Emulator();
  uint16_t port() const { return port_; }
  const std::string& name() const { return name_; }
  testing::Process& process() { return *process_; }

  // POST /v1/debug/control with the token; true on 200.
  bool control(std::string_view json);
  // Applied appends of `stream`, in order; an error when the listing can't be read.
  StatusOr<std::vector<Applied>> applied(std::string_view stream);
  // GET /v1/debug/requests (JSON text).
  std::string requests();

 private:
  std::string name_;
  std::unique_ptr<testing::Process> process_;
  uint16_t port_ = 0;
};

// How a test reaches the cell, and how its ferries reach owners. kPlain / kTls: the cell's
// listeners are plain / TLS and its clients speak HTTP/1.1; kH2c / kH2Tls: the same cells, the
// clients speak HTTP/2 (prior knowledge / ALPN h2). In these four, forwards between ferries are
// HTTP/1.1 (forwarding.owner_protocol: http1). The *H2Owner ones are the same four with
// forwards over HTTP/2 (issue 13): every listener serves HTTP/2 too, and the ferries forward
// with owner_protocol h2 (h2c, prior knowledge) in a plain cell, auto (ALPN picks h2) in a TLS
// cell.
enum class Transport {
  kPlain,
  kTls,
  kH2c,
  kH2Tls,
  kPlainH2Owner,
  kTlsH2Owner,
  kH2cH2Owner,
  kH2TlsH2Owner,
};
inline bool isTls(Transport t) {
  return t == Transport::kTls || t == Transport::kH2Tls || t == Transport::kTlsH2Owner ||
         t == Transport::kH2TlsH2Owner;
}
// The CLIENT speaks HTTP/2.
inline bool isHttp2(Transport t) {
  return t == Transport::kH2c || t == Transport::kH2Tls || t == Transport::kH2cH2Owner ||
         t == Transport::kH2TlsH2Owner;
}
// Forwards between the cell's ferries are HTTP/2.
inline bool ownerHttp2(Transport t) {
  return t == Transport::kPlainH2Owner || t == Transport::kTlsH2Owner ||
         t == Transport::kH2cH2Owner || t == Transport::kH2TlsH2Owner;
}
inline const char* toString(Transport t) {
  switch (t) {
    case Transport::kPlain:
      return "Plain";
    case Transport::kTls:
      return "Tls";
    case Transport::kH2c:
      return "H2c";
    case Transport::kH2Tls:
      return "H2Tls";
    case Transport::kPlainH2Owner:
      return "PlainH2Owner";
    case Transport::kTlsH2Owner:
      return "TlsH2Owner";
    case Transport::kH2cH2Owner:
      return "H2cH2Owner";
    case Transport::kH2TlsH2Owner:
      return "H2TlsH2Owner";
  }
  return "?";
}

struct CellOptions {
  Transport transport = Transport::kPlain;
  int members = 3;
  uint32_t shards = 16;
  uint32_t replay_buffer_bytes = 65536;
  std::string watch_interval = "200ms";
  std::vector<std::string> emulator_args;  // extra flags for every emulator
  // forwarding.owner_protocol of every ferry ("" = from the transport: http1, or for the
  // *H2Owner transports h2 in a plain cell and not set (the default, auto) in a TLS cell).
  std::string owner_protocol;
  // More forwarding keys for every ferry (flow-map entries, e.g. "owner_h2: {ping_interval: 1s}").
  std::string forwarding_extra_yaml;
  std::string owner_routing_yaml;  // every ferry's forwarding.owner_routing (empty: off)
  std::string ferry_extra_yaml;    // top-level keys appended to every ferry's config
  std::string limits_extra_yaml;   // more limits keys for every ferry (flow-map entries)
};

class ForwardingCell {
 public:
  static StatusOr<std::unique_ptr<ForwardingCell>> create(CellOptions options = {});
  ~ForwardingCell();

  size_t size() const { return names_.size(); }
  const std::string& name(size_t i) const { return names_[i]; }
  Emulator& emulator(size_t i) { return *emulators_[i]; }
  Ferry& ferry(size_t i) { return *ferries_[i]; }
  const std::string& workDir() const { return work_dir_; }
  const std::string& fleetFile(size_t i) const { return fleet_files_[i]; }

  // The final peer table: every member's ferry URL.
  PeerList peers() const;
  // A peer URL for `port` in the cell's scheme (http or https).
  std::string peerUrl(uint16_t port) const;
  // kTls: the generated certificates; nullptr for a plain cell.
  const testing::CellTlsFiles* tlsFiles() const { return tls_ ? &*tls_ : nullptr; }
  // What a client of the cell connects with (nullptr: plain).
  const testing::ClientTls* clientTls() const { return client_tls_ ? &*client_tls_ : nullptr; }
  // Writes ferry `i`'s fleet file (atomically).
  Status writeFleetFile(size_t i, const std::string& content);
  // Starts one more ferry with a spec of the test's choosing (e.g. another instance_name or a
  // fleet file lacking the owner); stopped with the cell. In a TLS cell a spec without TLS
  // settings gets the cell's (listener and forwarding, for its instance_name); in an HTTP/2
  // cell its listener serves HTTP/2.
  StatusOr<Ferry*> startExtraFerry(FerrySpec spec);

  size_t ownerIndexOf(std::string_view stream) const;
  // The first "<prefix>-<n>" owned by member `i`.
  std::string streamOwnedBy(size_t i, std::string_view prefix = "s") const;

  void stop();

 private:
  ForwardingCell() = default;
  void applyTransport(FerrySpec& spec) const;
  CellOptions options_;
  std::optional<testing::CellTlsFiles> tls_;
  std::optional<testing::ClientTls> client_tls_;
  std::string work_dir_;
  std::vector<std::string> names_;
  std::vector<std::string> fleet_files_;
  std::vector<std::unique_ptr<Emulator>> emulators_;
  std::vector<std::unique_ptr<Ferry>> ferries_;
  std::vector<std::unique_ptr<Ferry>> extra_ferries_;
};

// A tiny scripted upstream for cases the emulator can't produce (an invalid Streams-Replay-To,
// a 409 on a debug route, a 404 naming an owner): every request on every connection is read
// (head and Content-Length body) and answered with `response` (raw bytes), then the connection
// is closed. Runs on its own thread; counts requests.
class CannedUpstream {
 public:
  explicit CannedUpstream(std::string response);
  ~CannedUpstream();
  uint16_t port() const { return port_; }
  int requests() const { return requests_.load(); }

 private:
  void run();
  std::string response_;
  int listen_fd_ = -1;
  int wake_fd_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::atomic<int> requests_{0};
  std::thread thread_;
};

// A loopback port nothing listens on (bound, then closed).
uint16_t closedPort();

}  // namespace ferry::fwdtest
