// Unit tests of the ownership math shared by the emulator and the cell.
#include "integration/streams_emulator/ownership.h"

#include <gtest/gtest.h>

#include <set>

namespace ferry::streams {
namespace {

TEST(OwnershipTest, Fnv1a32KnownVectors) {
  // Reference values of FNV-1a 32 (Fowler/Noll/Vo test vectors).
  EXPECT_EQ(fnv1a32(""), 0x811c9dc5u);
  EXPECT_EQ(fnv1a32("a"), 0xe40c292cu);
  EXPECT_EQ(fnv1a32("foobar"), 0xbf9cf968u);
}

TEST(OwnershipTest, RouteHashIsSha256Prefix) {
  // SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 ...
  const RouteHash h = routeHash("abc");
  const uint8_t expected[16] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
                                0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(h[i], expected[i]) << i;
}

TEST(OwnershipTest, ShardPrefixIsLeadingBits) {
  const RouteHash h = routeHash("abc");  // 0xba = 1011 1010, 0x78 = 0111 1000
  EXPECT_EQ(shardPrefix(h, 1), "");
  EXPECT_EQ(shardPrefix(h, 2), "1");
  EXPECT_EQ(shardPrefix(h, 16), "1011");
  EXPECT_EQ(shardPrefix(h, 256), "10111010");
  EXPECT_EQ(shardPrefix(h, 1024), "1011101001");
  EXPECT_EQ(shardOf("abc", 16), "1011");
}

TEST(OwnershipTest, OwnerIsHighestFnvOfShardAndName) {
  const std::vector<std::string> members = {"inst-1", "inst-2", "inst-3", "inst-4"};
  for (const char* shard : {"0000", "0110", "1011", "1111"}) {
    int best = 0;
    for (int i = 1; i < 4; ++i) {
      if (fnv1a32(std::string(shard) + " " + members[i]) >
          fnv1a32(std::string(shard) + " " + members[best])) {
        best = i;
      }
    }
    EXPECT_EQ(ownerIndexOfShard(shard, members), best) << shard;
  }
}

TEST(OwnershipTest, TiesGoToTheFirstListed) {
  const std::vector<std::string> same = {"inst-1", "inst-1"};
  EXPECT_EQ(ownerIndexOfShard("0101", same), 0);
  EXPECT_EQ(ownerIndexOfShard("0101", {}), -1);
}

TEST(OwnershipTest, EveryMemberOwnsSomeShards) {
  const std::vector<std::string> members = {"inst-1", "inst-2", "inst-3", "inst-4"};
  std::set<int> owners;
  for (int i = 0; i < 2000; ++i) owners.insert(ownerIndex("s-" + std::to_string(i), 16, members));
  EXPECT_EQ(owners.size(), 4u);
}

TEST(OwnershipTest, RemovingAMemberMovesOnlyItsShards) {
  // Rendezvous hashing: a shard whose owner stays in the set keeps its owner.
  const std::vector<std::string> four = {"inst-1", "inst-2", "inst-3", "inst-4"};
  const std::vector<std::string> three = {"inst-1", "inst-2", "inst-3"};
  for (int s = 0; s < 16; ++s) {
    std::string shard;
    for (int b = 3; b >= 0; --b) shard.push_back((s >> b) & 1 ? '1' : '0');
    const int before = ownerIndexOfShard(shard, four);
    if (before != 3) {
      EXPECT_EQ(ownerIndexOfShard(shard, three), before) << shard;
    }
  }
}

TEST(OwnershipTest, PowerOfTwo) {
  EXPECT_TRUE(isPowerOfTwo(1));
  EXPECT_TRUE(isPowerOfTwo(16));
  EXPECT_FALSE(isPowerOfTwo(0));
  EXPECT_FALSE(isPowerOfTwo(12));
}

}  // namespace
}  // namespace ferry::streams
