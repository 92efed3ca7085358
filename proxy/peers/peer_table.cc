#include "proxy/peers/peer_table.h"

#include <utility>

namespace ferry::peers {
namespace {

// RFC 9110 section 5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
// "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
bool isTchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
    return true;
  }
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string bracketed(const std::string& host) {
  // Only IPv6 literals contain ':' (reg-names and IPv4 literals never do).
  return host.find(':') == std::string::npos ? host : "[" + host + "]";
}

}  // namespace

bool isValidInstanceName(std::string_view name) {
  if (name.empty() || name.size() > kMaxInstanceNameLength) {
    return false;
  }
  for (char c : name) {
    if (!isTchar(c)) {
      return false;
    }
  }
  return true;
}

std::string PeerOrigin::origin() const { return scheme + "://" + authority(); }

std::string PeerOrigin::authority() const { return bracketed(host) + ":" + std::to_string(port); }

PeerTable::PeerTable(std::map<std::string, PeerOrigin> peers, uint64_t version)
    : peers_(std::move(peers)), version_(version) {}

const PeerOrigin* PeerTable::find(std::string_view name) const {
  // std::map<std::string, ...> has no heterogeneous lookup; a lookup happens once per 409, so
  // the temporary string is not worth a different map type in the public signature.
  auto it = peers_.find(std::string(name));
  return it == peers_.end() ? nullptr : &it->second;
}

}  // namespace ferry::peers
