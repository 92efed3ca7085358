#include "integration/streams_emulator/ownership.h"

#include <openssl/evp.h>

namespace ferry::streams {

uint32_t fnv1a32(std::string_view bytes) {
  uint32_t h = 0x811c9dc5u;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x01000193u;
  }
  return h;
}

RouteHash routeHash(std::string_view name) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(name.data(), name.size(), digest, &len, EVP_sha256(), nullptr);
  RouteHash out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = digest[i];
  return out;
}

bool isPowerOfTwo(uint32_t n) { return n != 0 && (n & (n - 1)) == 0; }

std::string shardPrefix(const RouteHash& hash, uint32_t shards) {
  uint32_t bits = 0;
  while ((1u << bits) < shards && bits < 128) ++bits;
  std::string out;
  out.reserve(bits);
  for (uint32_t i = 0; i < bits; ++i) {
    const bool set = (hash[i / 8] >> (7 - i % 8)) & 1;
    out.push_back(set ? '1' : '0');
  }
  return out;
}

std::string shardOf(std::string_view name, uint32_t shards) {
  return shardPrefix(routeHash(name), shards);
}

int ownerIndexOfShard(std::string_view shard, const std::vector<std::string>& members) {
  int best = -1;
  uint32_t best_score = 0;
  std::string key;
  for (size_t i = 0; i < members.size(); ++i) {
    key.assign(shard);
    key.push_back(' ');
    key.append(members[i]);
    const uint32_t score = fnv1a32(key);
    // Strictly greater: on a tie the member listed first keeps the shard.
    if (best < 0 || score > best_score) {
      best = static_cast<int>(i);
      best_score = score;
    }
  }
  return best;
}

int ownerIndex(std::string_view name, uint32_t shards, const std::vector<std::string>& members) {
  return ownerIndexOfShard(shardOf(name, shards), members);
}

}  // namespace ferry::streams
