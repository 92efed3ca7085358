#pragma once
// How a Streams instance reads the stream name out of a product path (docs/streams-instance.md):
// `/v1/streams/{name}` with the name running up to the first records | consumers | producers |
// watches | forks segment (bare or with a ":verb"), and a ":verb" that ends the name (as in
// `/v1/streams/orders:seal`) not part of it. The emulator's own reading, written from the
// instance's behaviour and not shared with ferry's owner-forwarding filter: a misreading in
// ferry must show up as a disagreement with the emulator, not hide in both
// (tests/integration/streams_emulator/stream_path_test.cc compares the two).

#include <string>
#include <string_view>

namespace ferry::streams {

struct ProductTarget {
  std::string_view name;  // still percent-encoded
  std::string_view rest;  // from the sub-resource segment on ("records:batch"); empty: none
  bool verb = false;      // the name ended in ":verb"
};

// `after_prefix` is the path after "/v1/streams/", without its query.
ProductTarget readProductTarget(std::string_view after_prefix);

// Percent-decodes once (RFC 3986 §2.1); an escape that is not two hex digits stays as it is.
std::string decodePercentOnce(std::string_view in);

}  // namespace ferry::streams
