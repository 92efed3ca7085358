#pragma once
// A per-thread cache of the 1 KiB blocks libevent allocates for evbuffer chains, plugged in
// through libevent's allocator hook (event_set_mem_functions).
//
// Why: an evbuffer that receives bytes while empty allocates a chain of at least 1 KiB
// (libevent 2.1's MIN_BUFFER_SIZE) and frees it as soon as those bytes are drained. A proxied
// request does that about five times (each socket read, each head written, a body). glibc's
// fast per-thread cache takes blocks of up to 1032 usable bytes, and a 1 KiB request lands
// just above it, so every such block went through malloc's shared bins: about 300 instructions
// per allocate/free pair, ~7 % of ferry's user-space instructions per request. Keeping a few
// of these blocks per thread makes the pair a handful of instructions.
//
// Every block is an ordinary malloc() block, so memory libevent allocated before the hook was
// installed (or that another thread frees) mixes freely with cached blocks.

#include <cstddef>

namespace ferry::event {

// Routes libevent's allocations through the cache. Call once at the start of main(), before
// any thread starts using libevent.
void installBufferBlockCache();

// The hook's functions, exposed for tests.
void* blockCacheMalloc(size_t size);
void* blockCacheRealloc(void* block, size_t size);
void blockCacheFree(void* block);
// Blocks the calling thread's cache holds now.
size_t blockCacheSize();

}  // namespace ferry::event
