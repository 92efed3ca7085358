// libFuzzer target: the fleet file parser (proxy/peers/peer_table_parser.h), which reads
// urls.json from disk each time it changes, and the origin and domain checks behind it. The
// first byte picks the policy (http allowed or not, a peer domain list or none); the rest is
// the file. Besides the sanitizers it checks that every origin the parser accepts prints as
// an origin the parser accepts again, unchanged (the table's authority() is sent as Host).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/peers/peer_table_parser.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

void checkRoundTrip(const ferry::peers::PeerOrigin& origin,
                    const ferry::peers::PeerPolicy& policy) {
  const std::string printed = origin.origin();
  auto again = ferry::peers::parseOrigin(printed, policy);
  if (!again.isOk()) ferry::fuzz::fail("an accepted origin does not parse again once printed");
  if (again->origin() != printed || again->authority() != origin.authority()) {
    ferry::fuzz::fail("an accepted origin changes when printed and parsed again");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  ferry::peers::PeerPolicy policy;
  policy.allow_http = (data[0] & 1) != 0;
  if ((data[0] & 2) != 0) policy.domains = {"streams.internal", "127.0.0.1", "::1"};
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);

  auto table = ferry::peers::parseFleetUrls(text, policy);
  if (table.isOk()) {
    for (const auto& [name, origin] : *table) checkRoundTrip(origin, policy);
  }
  // The same bytes as one origin and as one peer domain: both are config values too.
  auto origin = ferry::peers::parseOrigin(text, policy);
  if (origin.isOk()) checkRoundTrip(*origin, policy);
  (void)ferry::peers::validatePeerDomain(text);
  return 0;
}
