#pragma once
// Typed configuration of one ferry process. Built by config/config_loader.cc from YAML (the
// only place that includes yaml-cpp) and shared read-only (shared_ptr<const FerryConfig>) by
// the server, the workers and the filters. Defaults here are the documented defaults.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ferry::config {

using Millis = std::chrono::milliseconds;

// A TCP endpoint. `host` is an IPv4/IPv6 literal or "localhost"; port 0 asks the kernel.
struct Endpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
};

// Server TLS on the listener (`listener.tls`; present = the listener speaks only TLS). Files
// are read and checked at load time, and again on SIGHUP.
struct ListenerTls {
  enum class ClientCert { None, Optional, Require };
  bool enabled = false;
  std::string cert_file;            // PEM chain, leaf first
  std::string key_file;             // PEM private key of the leaf
  std::string min_version = "1.2";  // "1.2" or "1.3"
  // Offered, in preference order; "h2" is left out of the default when listener.http2 is off.
  std::vector<std::string> alpn = {"h2", "http/1.1"};
  Millis handshake_timeout{10'000};           // accept to handshake done; then closed
  bool session_tickets = true;                // resumption (RFC 8446 section 4.6.1)
  Millis ticket_key_rotation{3'600'000};      // a ticket key encrypts this long, decrypts 2x
  std::string client_ca_file;                 // mTLS: CAs that sign client certificates
  ClientCert client_cert = ClientCert::None;  // set by client_ca_file (default require)
  // TLS 1.3 suites in ferry's order of preference (it picks, not the client): AES-128-GCM
  // first, as BoringSSL (Envoy) and Mozilla's intermediate profile order them; OpenSSL's own
  // default puts AES-256-GCM-SHA384 first, whose SHA-384 key schedule costs more per handshake
  // (x86's SHA extensions do SHA-256, not SHA-512: bench/README, 2026-12-06) and adds no
  // strength past the ~128-bit security of the key exchange (X25519) anyway.
  std::string cipher_suites = kDefaultCipherSuites;
  std::string ciphers;  // TLS 1.2 cipher list (OpenSSL syntax); empty: OpenSSL's default
  static constexpr char kDefaultCipherSuites[] =
      "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
};

// HTTP/2 on the listener (`listener.http2`): h2 by ALPN on a TLS listener, h2c with prior
// knowledge on a cleartext one (HTTP/1.1 keeps working on the same port).
struct ListenerHttp2 {
  bool enabled = true;
  // Streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). Live feeds
  // are long: a load balancer or a page puts hundreds on one connection.
  uint32_t max_concurrent_streams = 256;
  // Request body a client may send on one stream before ferry returns credit
  // (SETTINGS_INITIAL_WINDOW_SIZE): bounds a stream's request memory.
  uint32_t initial_stream_window_bytes = 64 * 1024;
};

struct Listener : Endpoint {
  ListenerTls tls;
  ListenerHttp2 http2;
  // Share the port with other processes (SO_REUSEPORT across processes). Off: a second ferry
  // on a port in use fails at start ("listener.port N: address in use").
  bool reuse_port = false;
};

// X-Forwarded-For / X-Forwarded-Proto on requests sent upstream (`forwarded_headers`).
struct ForwardedHeaders {
  bool x_forwarded = true;    // append the client address (XFF) and set the scheme (XFP)
  uint32_t trusted_hops = 0;  // proxies in front of ferry whose XFF entries and XFP are kept;
                              // 0: what the client sent is replaced
};

// Probing the local instance's readiness route (`local_instance.readiness`; absent: no probe,
// /ready reflects ferry alone). While a probe fails, ferry's /ready answers 503.
struct Readiness {
  bool enabled = false;
  std::string path = "/readyz";  // Streams: 200 ok, 503 "runtime draining"
  Millis interval{2'000};        // from one probe's end to the next one's start
  Millis timeout{1'000};         // connect to the whole answer; past it the probe failed
};

struct LocalInstance : Endpoint {
  Readiness readiness;
};

// The admin listener. It shares the data plane's head limits and timeouts
// (limits.max_request_header_bytes, timeouts.request_head, timeouts.keepalive_idle).
struct Admin {
  std::string host = "127.0.0.1";
  uint16_t port = 9901;
  uint32_t max_connections = 16;  // open admin connections; over it: 503 and close
};

struct Limits {
  uint32_t max_request_header_bytes = 60 * 1024;       // over it: 431
  uint32_t max_request_headers = 100;                  // header fields per request; over it: 431
  uint32_t max_connections = 10000;                    // downstream, whole process; over it: 503
  uint32_t replay_buffer_bytes = 64 * 1024;            // request body kept for a replay
  uint32_t buffer_high_watermark_bytes = 1024 * 1024;  // per direction; low = high / 2
  uint32_t max_pending_upstream_requests = 1024;       // per worker pool queue; over it: 503
  // A client connection's fair share of what all clients share (upstream connections, pool
  // queues): at most this many of its requests in flight at once; more wait (HTTP/2 streams
  // are taken, then started as earlier ones end).
  uint32_t max_active_requests_per_connection = 100;
  // Open connections from one client IP address, whole process; 0 = no limit. Over it: 503.
  uint32_t max_connections_per_client_address = 0;
};

struct Timeouts {
  Millis request_head{10'000};       // downstream: from first byte to end of head -> 408
  Millis keepalive_idle{60'000};     // downstream idle keep-alive connection is closed
  Millis upstream_connect{2'000};    // connect to the local instance or an owner
  Millis upstream_idle{4'000};       // idle pooled upstream connection is closed (below upstream's)
  Millis stream_idle{300'000};       // no byte either way on an active stream -> 504/cut
  Millis request_body_idle{15'000};  // no request body byte while one is due -> 408/cut; 0 = none
  Millis response{0};                // whole response; 0 = none (live feeds)
  Millis response_head{15'000};      // request sent whole -> upstream's response head; 0 = none
                                     // (not for live feeds); owner: 503, local instance: 504
  // Drain (SIGTERM/SIGINT, admin POST /drain): /ready fails at once; the listener keeps
  // accepting for drain_delay (load balancers notice), then closes; in-flight requests get
  // `drain` more. 0 + 25 s fits Kubernetes' 30 s grace period (docs/drain.md).
  Millis drain_delay{0};
  Millis drain{25'000};
};

struct UpstreamPool {
  uint32_t max_connections = 256;  // per worker, per upstream target
};

// Client TLS to https owners (`forwarding.tls`). Files are read and checked at load time.
struct ForwardingTls {
  std::string ca_file;           // PEM CAs that sign owners' certificates; empty: system store
  bool verify = true;            // false: no certificate or name check (loud start-up warning)
  std::string client_cert_file;  // mTLS: PEM chain presented to owners; with client_key_file
  std::string client_key_file;
};

// How ferry speaks to owners (`forwarding.owner_protocol`). The local instance is always
// HTTP/1.1 (Streams speaks only that).
enum class OwnerProtocol {
  Auto,   // https: ALPN offers [h2, http/1.1], the owner picks; http: HTTP/1.1
  H2,     // https: ALPN offers [h2] only; http: h2c with prior knowledge (RFC 9113 §3.3)
  Http1,  // HTTP/1.1 always (https: ALPN offers [http/1.1])
};

// Multiplexed HTTP/2 to owners (`forwarding.owner_http2`).
struct OwnerHttp2 {
  // Streams per connection at most; the owner's SETTINGS_MAX_CONCURRENT_STREAMS caps it lower.
  uint32_t max_streams_per_connection = 1000;
  Millis ping_interval{10'000};  // nothing read this long on a connection -> PING
  Millis ping_timeout{5'000};    // no PING ack this long -> the connection is closed
};

// Owner routing (`forwarding.owner_routing`, docs/forwarding.md "Owner routing"): requests for
// a stream go straight to the owner that last answered a forward for it.
struct OwnerRouting {
  bool enabled = true;             // docs/owner-routing.md: why on
  uint32_t max_entries = 100'000;  // per worker; least recently used evicted first
  Millis ttl{30'000};              // an entry dies this long after its last evidence
};

// Owner forwarding (filters/owner_forwarding) and its trusted peer table.
struct Forwarding {
  bool enabled = true;
  std::string fleet_file;                    // the fleet's urls.json; watched for changes
  std::map<std::string, std::string> peers;  // inline name -> origin (used when no file)
  bool allow_http_peers = false;             // otherwise only https origins are accepted
  std::vector<std::string> peer_domains;     // when set, peer hosts must be in (or under) one
  // Path prefixes of data-plane routes that may be forwarded.
  std::vector<std::string> routes = {"/v1/stream/", "/v1/streams/"};
  Millis watch_interval{1'000};  // fleet file change detection
  ForwardingTls tls;
  OwnerProtocol owner_protocol = OwnerProtocol::Auto;
  OwnerHttp2 owner_http2;
  OwnerRouting owner_routing;
};

// Fault injection (`fault`; filters/fault/, docs/fault-injection.md): for tests of how clients
// and the fleet cope with failing or slow requests. Off unless `enabled: true`, and even then
// only requests carrying `header` are eligible.
struct FaultAbort {
  uint32_t percent = 0;   // of eligible requests, 0..100
  uint32_t status = 503;  // 400..599, with the error code "fault_injected"
};
struct FaultDelay {
  uint32_t percent = 0;    // of eligible requests, 0..100
  Millis duration{1'000};  // how long the request is held before it goes on
};
struct Fault {
  bool enabled = false;
  std::string header = "x-ferry-fault";  // a field name (lower-cased); requests without it pass
  FaultAbort abort;
  FaultDelay delay;
};

// Live SSE feeds that survive a hand-over (`live_feeds`, docs/live-feeds.md): the live-feeds
// filter reads a feed again from the last delivered offset when its upstream ends or breaks.
struct LiveFeeds {
  bool resume = true;
  Millis resume_deadline{30'000};  // from a feed's break; past it the client's response ends
  // Live SSE reads of one stream that a Streams instance could not tell apart share one
  // upstream feed per worker (docs/live-feeds.md, "Sharing").
  bool share = false;
  // A subscriber whose client takes its events slower than the shared feed comes is detached
  // to a read of its own once this many bytes wait for it beyond its write buffer.
  uint32_t subscriber_buffer = 256 * 1024;
  // Request header fields (lower-cased) that must be equal for two reads to share, besides
  // Authorization and Cookie (always).
  std::vector<std::string> share_key_headers;
};

struct FerryConfig {
  std::string instance_name;  // this instance's name in the fleet (the instance marker)
  Listener listener{{"127.0.0.1", 10000}, {}, {}};
  LocalInstance local_instance{{"127.0.0.1", 8080}, {}};
  Admin admin;
  uint32_t workers = 0;  // 0 = one per core
  // A loop pass's writes to plain sockets go to the kernel together (io_uring) when it allows.
  bool batched_writes = true;
  Limits limits;
  Timeouts timeouts;
  UpstreamPool upstream;
  Forwarding forwarding;
  LiveFeeds live_feeds;
  std::string access_log;                  // path, "-" for stdout, empty for none
  std::string access_log_format = "json";  // "json" or "text"
  ForwardedHeaders forwarded_headers;
  Fault fault;
};

}  // namespace ferry::config
