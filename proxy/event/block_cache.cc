#include "proxy/event/block_cache.h"

#include <event2/event.h>
#include <malloc.h>

#include <cstdlib>

namespace ferry::event {

namespace {

// libevent 2.1's smallest chain allocation (MIN_BUFFER_SIZE in buffer.c).
constexpr size_t kBlockSize = 1024;
// Enough for the chains of a burst of requests on one worker; at most 32 KiB per thread.
constexpr size_t kMaxBlocks = 32;

struct BlockCache {
  void* blocks[kMaxBlocks];
  size_t count = 0;
  bool alive = true;  // false once the thread's cache is gone (thread exit)

  ~BlockCache() {
    for (size_t i = 0; i < count; ++i) std::free(blocks[i]);
    count = 0;
    alive = false;
  }
};

thread_local BlockCache cache;

// True for a block that can serve a kBlockSize request again: malloc rounds sizes up, so a
// block freed here may be a little larger than asked for, never smaller.
bool isChainBlock(void* block) {
  const size_t usable = malloc_usable_size(block);
  return usable >= kBlockSize && usable < kBlockSize + 64;
}

}  // namespace

void* blockCacheMalloc(size_t size) {
  if (size == kBlockSize && cache.count > 0) return cache.blocks[--cache.count];
  return std::malloc(size);
}

void* blockCacheRealloc(void* block, size_t size) { return std::realloc(block, size); }

void blockCacheFree(void* block) {
  if (block != nullptr && cache.alive && cache.count < kMaxBlocks && isChainBlock(block)) {
    cache.blocks[cache.count++] = block;
    return;
  }
  std::free(block);
}

size_t blockCacheSize() { return cache.count; }

void installBufferBlockCache() {
  event_set_mem_functions(blockCacheMalloc, blockCacheRealloc, blockCacheFree);
}

}  // namespace ferry::event
