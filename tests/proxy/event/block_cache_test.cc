// The per-thread cache of libevent's 1 KiB chain blocks: a freed block comes back for the next
// 1 KiB allocation, other sizes pass straight through to malloc, the cache is bounded, and
// evbuffers work with the hook installed.

#include "proxy/event/block_cache.h"

#include <event2/buffer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ferry::event {
namespace {

TEST(BlockCacheTest, FreedChainBlockServesNextChainAllocation) {
  // Start from an empty cache, whatever earlier tests left in it.
  std::vector<void*> held;
  while (blockCacheSize() > 0) held.push_back(blockCacheMalloc(1024));
  void* block = blockCacheMalloc(1024);
  ASSERT_NE(block, nullptr);
  blockCacheFree(block);
  EXPECT_EQ(blockCacheSize(), 1u);
  EXPECT_EQ(blockCacheMalloc(1024), block);
  EXPECT_EQ(blockCacheSize(), 0u);
  blockCacheFree(block);
  for (void* h : held) blockCacheFree(h);
}

TEST(BlockCacheTest, OtherSizesAreNotCached) {
  const size_t before = blockCacheSize();
  for (size_t size : {16, 200, 2048, 16384}) {
    void* block = blockCacheMalloc(size);
    ASSERT_NE(block, nullptr);
    blockCacheFree(block);
    EXPECT_EQ(blockCacheSize(), before) << size;
  }
  void* grown = blockCacheRealloc(nullptr, 100);
  grown = blockCacheRealloc(grown, 5000);
  ASSERT_NE(grown, nullptr);
  blockCacheFree(grown);
  blockCacheFree(nullptr);
  EXPECT_EQ(blockCacheSize(), before);
}

TEST(BlockCacheTest, Bounded) {
  std::vector<void*> blocks;
  for (int i = 0; i < 100; ++i) blocks.push_back(blockCacheMalloc(1024));
  for (void* block : blocks) blockCacheFree(block);
  EXPECT_LE(blockCacheSize(), 32u);
  EXPECT_GT(blockCacheSize(), 0u);
}

TEST(BlockCacheTest, EvbuffersWorkThroughTheHook) {
  installBufferBlockCache();
  for (int round = 0; round < 3; ++round) {
    evbuffer* buffer = evbuffer_new();
    const std::string bytes(3000, 'x');
    for (int i = 0; i < 10; ++i) evbuffer_add(buffer, "small", 5);
    evbuffer_add(buffer, bytes.data(), bytes.size());
    EXPECT_EQ(evbuffer_get_length(buffer), 3050u);
    evbuffer_drain(buffer, 3050);
    evbuffer_add(buffer, "again", 5);
    EXPECT_EQ(evbuffer_get_length(buffer), 5u);
    evbuffer_free(buffer);
  }
  EXPECT_GT(blockCacheSize(), 0u);
}

}  // namespace
}  // namespace ferry::event
