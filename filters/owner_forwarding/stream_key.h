#pragma once
// The Streams stream a data-plane request is for, as the instance names it
// (docs/streams-instance.md): the key of owner routing's table. Ownership is per
// stream name (its route hash), and raw and product routes share one store, so both surfaces
// give the same key for the same stream.
//
// The streams emulator reads stream names on its own (integration/streams_emulator/
// stream_path.h); tests/integration/streams_emulator/stream_path_test.cc checks that the two
// agree on paths of every shape.

#include <optional>
#include <string>
#include <string_view>

namespace ferry::filters {

inline constexpr std::string_view kRawStreamPrefix = "/v1/stream/";
inline constexpr std::string_view kProductStreamPrefix = "/v1/streams/";

// Raw `/v1/stream/{name}` (the name may contain '/'), product `/v1/streams/{name}...` (cut at
// the first records|consumers|producers|watches|forks segment, a trailing ":verb" removed);
// the query is not part of it; percent-decoded once, as the instance does. nullopt for any
// other path, or an empty name: such requests are never routed.
std::optional<std::string> streamKey(std::string_view path);

// A product path after kProductStreamPrefix, split at its first
// records|consumers|producers|watches|forks segment.
struct ProductPath {
  std::string_view name;  // still percent-encoded; a trailing ":verb" removed
  std::string_view sub;   // from that segment on (e.g. "records:batch"); empty when none
  bool had_verb = false;  // the name carried a ":verb" (e.g. /v1/streams/orders:seal)
};
ProductPath splitProductPath(std::string_view rest);

}  // namespace ferry::filters
