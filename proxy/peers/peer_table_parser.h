#pragma once
// Parsers that turn fleet configuration into the entries of a PeerTable. Called by the config
// loader (to validate `forwarding.fleet_file` and inline `forwarding.peers` at start-up) and by
// the fleet file loader each time urls.json changes. Pure functions: no network, no globals.
//
// All-or-nothing: any invalid entry rejects the WHOLE table, and the Status message names the
// entry ("inst-2: userinfo not allowed in \"https://u@h\""). The caller keeps its last good
// table (docs/streams-instance.md, "Fleet publication").

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/common/status.h"
#include "proxy/peers/peer_table.h"

namespace ferry::peers {

// Largest fleet file loadFleetFile() reads.
inline constexpr size_t kMaxFleetFileBytes = 1024 * 1024;

// What origins are trusted, from `forwarding.allow_http_peers` and `forwarding.peer_domains`.
struct PeerPolicy {
  bool allow_http = false;           // otherwise only https origins are accepted
  std::vector<std::string> domains;  // non-empty: host must equal one or end with "." + one
};

// Parses one bare origin: "http[s]://host[:port]" with an optional single trailing "/".
// Rejects userinfo, path, query, fragment, http unless allowed, ports outside 1..65535, and
// hosts outside policy.domains (an IP literal must then be listed exactly). The message does
// not name an entry; the map parsers add that.
StatusOr<PeerOrigin> parseOrigin(std::string_view url, const PeerPolicy& policy);

// Parses the fleet's urls.json: a JSON object of instance name -> origin string.
StatusOr<std::map<std::string, PeerOrigin>> parseFleetUrls(std::string_view json,
                                                           const PeerPolicy& policy);

// Validates an inline name -> origin map (config `forwarding.peers`).
StatusOr<std::map<std::string, PeerOrigin>> parsePeerMap(
    const std::map<std::string, std::string>& peers, const PeerPolicy& policy);

// Reads `path` (at most kMaxFleetFileBytes) and parses it with parseFleetUrls(). Blocking file
// I/O: call it from the main thread or the loader, never from a worker's event loop.
StatusOr<std::map<std::string, PeerOrigin>> loadFleetFile(const std::string& path,
                                                          const PeerPolicy& policy);

// Ok when `domain` may appear in PeerPolicy::domains: a DNS name (no leading, trailing or
// doubled dot), an IPv4 literal, or an IPv6 literal with or without brackets.
Status validatePeerDomain(std::string_view domain);

}  // namespace ferry::peers
