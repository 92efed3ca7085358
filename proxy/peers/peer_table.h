#pragma once
// The peer table: the trusted map instance name -> origin that owner forwarding sends to
// (docs/forwarding.md, "Terms"). It is built only from fleet config (the fleet's urls.json or
// inline `forwarding.peers`), never from a request or a response.
//
// A PeerTable is an immutable snapshot. The loader builds a new one whenever the fleet file
// changes and parses cleanly, and publishes it whole as a PeerTableSharedPtr; workers and
// filters keep the pointer they were handed for as long as they need it. A bad publication
// never produces a table, so the last good one stays in use.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace ferry::peers {

// Longest instance name accepted, in bytes.
inline constexpr size_t kMaxInstanceNameLength = 128;

// True when `name` is an RFC 9110 token (section 5.6.2, tchar) of 1..128 characters. Used for
// this instance's marker, for peer names and for the value of Streams-Replay-To.
bool isValidInstanceName(std::string_view name);

// A validated bare origin. `scheme` is "http" or "https"; `host` is a lower-case reg-name, an
// IPv4 literal, or an IPv6 literal WITHOUT brackets (ready for getaddrinfo); `port` is explicit
// or the scheme's default (80/443).
struct PeerOrigin {
  std::string scheme;
  std::string host;
  uint16_t port = 0;

  // "scheme://host:port", the port always written, IPv6 hosts in brackets, e.g.
  // "http://127.0.0.1:8081" or "https://[::1]:443".
  std::string origin() const;
  // "host:port" with IPv6 hosts in brackets: the value for the Host / :authority header.
  std::string authority() const;
  bool isHttps() const { return scheme == "https"; }
  // The numeric address a hostname resolved to when the table was loaded (empty for IP
  // literals, and for names that did not resolve).
  std::string address;

  // The address to connect to: the resolved address, "localhost" as the IPv4 loopback, else
  // the host as written (ferry resolves no names on the request path).
  std::string connectHost() const {
    if (!address.empty()) return address;
    return host == "localhost" ? "127.0.0.1" : host;
  }

  bool operator==(const PeerOrigin&) const = default;
};

class PeerTable {
 public:
  // `version` increases with every table the loader publishes (for stats and /admin).
  PeerTable(std::map<std::string, PeerOrigin> peers, uint64_t version);

  // The origin of instance `name`, or nullptr when the table does not know it. The pointer
  // lives as long as this table.
  const PeerOrigin* find(std::string_view name) const;
  size_t size() const { return peers_.size(); }
  uint64_t version() const { return version_; }
  const std::map<std::string, PeerOrigin>& peers() const { return peers_; }

 private:
  const std::map<std::string, PeerOrigin> peers_;
  const uint64_t version_;
};

using PeerTableSharedPtr = std::shared_ptr<const PeerTable>;

}  // namespace ferry::peers
