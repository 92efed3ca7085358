#pragma once
// Stream ownership math of a Streams fleet: stream name -> route hash -> shard -> owner.
// Pure functions, no I/O. Shared by the emulator (to decide whether to answer 409) and by the
// cell / tests / benchmarks (to know in advance which member owns a stream), so that both
// always agree.
//
//   route hash = first 16 bytes of SHA-256(name)
//   shard      = the first log2(shards) bits of the route hash, written as '0'/'1' characters
//   owner      = the member with the highest FNV-1a-32("<shard> <member>"); ties go to the
//                member listed first (rendezvous hashing).

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::streams {

using RouteHash = std::array<uint8_t, 16>;

// FNV-1a, 32 bit (offset basis 0x811c9dc5, prime 0x01000193).
uint32_t fnv1a32(std::string_view bytes);

// The first 16 bytes of SHA-256(name).
RouteHash routeHash(std::string_view name);

// The shard prefix of `hash` for a topology of `shards` shards (a power of two, >= 1):
// log2(shards) bits, most significant first. shards == 1 gives "".
std::string shardPrefix(const RouteHash& hash, uint32_t shards);

// Shorthand for shardPrefix(routeHash(name), shards).
std::string shardOf(std::string_view name, uint32_t shards);

// Index into `members` of the owner of `shard`; -1 when `members` is empty.
int ownerIndexOfShard(std::string_view shard, const std::vector<std::string>& members);

// Index into `members` of the owner of stream `name`; -1 when `members` is empty.
int ownerIndex(std::string_view name, uint32_t shards, const std::vector<std::string>& members);

// True when `n` is a power of two (1, 2, 4, ...).
bool isPowerOfTwo(uint32_t n);

}  // namespace ferry::streams
