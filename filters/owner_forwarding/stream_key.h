#pragma once
// The Streams stream a data-plane request is for, as the instance names it
// (../shared/docs/streams-instance.md): the key of owner routing's table. Ownership is per
// stream name (its route hash), and raw and product routes share one store, so both surfaces
// give the same key for the same stream.

#include <optional>
#include <string>
#include <string_view>

namespace ferry::filters {

// Raw `/v1/stream/{name}` (the name may contain '/'), product `/v1/streams/{name}...` (cut at
// the first records|consumers|producers|watches|forks segment, a trailing ":verb" removed);
// the query is not part of it; percent-decoded once, as the instance does. nullopt for any
// other path, or an empty name: such requests are never routed.
std::optional<std::string> streamKey(std::string_view path);

}  // namespace ferry::filters
