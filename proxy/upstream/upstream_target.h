#pragma once
// Where a request goes upstream (UpstreamTarget) and how an attempt there failed
// (UpstreamFailure): the words the pools (conn_pool.h) speak, and the filter API
// (proxy/http/filter.h) names them too, since a filter chooses targets and answers failures.
//
// A leaf: it includes nothing of ferry, so the one include it allows below proxy/upstream
// (http/filter.h -> upstream/upstream_target.h, scripts/check-layers.py) brings in no pool
// machinery. Library ferry_upstream_target, without dependencies.

#include <cstdint>
#include <string>
#include <string_view>

namespace ferry::upstream {

// Where the terminal filter sends a request.
struct UpstreamTarget {
  std::string name;    // stats label: "local" or a peer's instance name
  std::string scheme;  // "http" or "https" (client TLS; the pool must have a TLS context)
  std::string host;    // numeric address
  uint16_t port = 0;
  std::string server_name;  // https: the URL's host, for SNI and the certificate check
  bool operator==(const UpstreamTarget& o) const {
    return scheme == o.scheme && host == o.host && port == o.port && server_name == o.server_name;
  }
};

struct UpstreamFailure {
  enum class Kind {
    ConnectFailed,       // refused, or the connect failed
    TlsHandshakeFailed,  // connected, but the TLS handshake failed (nothing was sent)
    ConnectTimeout,
    Unsupported,          // e.g. an https target with no TLS context configured
    Overflow,             // the pool's queue is full
    Reset,                // the connection closed or reset mid-request
    ProtocolError,        // the upstream's response was malformed
    ResponseHeadTimeout,  // the whole request was sent; no response head came in time
    StreamRefused,        // HTTP/2: the upstream processed nothing (REFUSED_STREAM, or above
                          // its GOAWAY's last-stream-id, RFC 9113 §8.7); request_bytes_sent false
  };
  Kind kind = Kind::Reset;
  bool request_bytes_sent = false;  // any request byte reached the upstream's socket buffer
  bool response_started = false;    // the response head already went to the client
  std::string detail;
};
// The access log's and the stats' name of a kind ("connect_failed", ...).
std::string_view failureKindName(UpstreamFailure::Kind kind);

}  // namespace ferry::upstream
