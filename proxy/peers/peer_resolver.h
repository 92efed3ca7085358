#pragma once
// Resolves peer hostnames to numeric addresses when the peer table is loaded (main thread,
// never on the request path). A name that does not resolve keeps no address: forwards to it
// fail before sending, so the client gets the local 409 unchanged.

#include <functional>
#include <optional>
#include <string>

namespace ferry::peers {

// Returns a numeric address for `host`, or nullopt.
using HostResolver = std::function<std::optional<std::string>(const std::string& host)>;

// getaddrinfo(), IPv4 answers first (the fleet's listeners are typically IPv4).
std::optional<std::string> resolveWithSystem(const std::string& host);

// True for IPv4/IPv6 literals (no resolution needed).
bool isIpLiteral(const std::string& host);

}  // namespace ferry::peers
