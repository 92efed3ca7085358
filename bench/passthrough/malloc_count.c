/* Counts heap allocations of the process it is preloaded into, for bench/passthrough/counts.py
 * (issue #23: allocations per request, a count that does not depend on machine load).
 *
 *   cc -O2 -shared -fPIC -o malloc_count.so malloc_count.c -ldl
 *   MALLOC_COUNT_FILE=/tmp/x LD_PRELOAD=./malloc_count.so ferry ...
 *
 * The counters live in MALLOC_COUNT_FILE (mapped shared), so a reader sees them while the process
 * runs: two uint64 words, allocations (malloc, calloc, realloc of NULL, aligned forms, and
 * operator new[] in every form: mimalloc, ferry's allocator, defines its own operator new rather
 * than going through malloc) and frees/deletes of non-NULL pointers. Without the variable
 * it counts into a private page. Relaxed atomic increments: ferry's workers run on threads.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t local_counts[2];
static uint64_t* counts = local_counts;
static void* (*real_malloc)(size_t);
static void* (*real_calloc)(size_t, size_t);
static void* (*real_realloc)(void*, size_t);
static void (*real_free)(void*);
static int (*real_posix_memalign)(void**, size_t, size_t);
static void* (*real_aligned_alloc)(size_t, size_t);

/* dlsym may calloc before real_calloc is known: serve that from a static arena. */
static char bootstrap[4096];
static size_t bootstrap_used;

static void count(int which) { __atomic_add_fetch(&counts[which], 1, __ATOMIC_RELAXED); }

__attribute__((constructor)) static void init(void) {
  real_malloc = dlsym(RTLD_NEXT, "malloc");
  real_calloc = dlsym(RTLD_NEXT, "calloc");
  real_realloc = dlsym(RTLD_NEXT, "realloc");
  real_free = dlsym(RTLD_NEXT, "free");
  real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
  real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
  const char* path = getenv("MALLOC_COUNT_FILE");
  if (path == NULL) return;
  int fd = open(path, O_RDWR | O_CREAT, 0644);
  if (fd < 0 || ftruncate(fd, 4096) != 0) abort();
  void* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) abort();
  close(fd);
  counts = p;
}

void* malloc(size_t n) {
  if (real_malloc == NULL) init();
  count(0);
  return real_malloc(n);
}

void* calloc(size_t a, size_t b) {
  if (real_calloc == NULL) {
    size_t n = (a * b + 15) & ~(size_t)15;
    if (bootstrap_used + n > sizeof bootstrap) return NULL;
    void* p = bootstrap + bootstrap_used;
    bootstrap_used += n;
    return p;
  }
  count(0);
  return real_calloc(a, b);
}

void* realloc(void* p, size_t n) {
  if (real_realloc == NULL) init();
  if (p == NULL) count(0);
  return real_realloc(p, n);
}

void free(void* p) {
  if (p == NULL || ((char*)p >= bootstrap && (char*)p < bootstrap + sizeof bootstrap)) return;
  if (real_free == NULL) init();
  count(1);
  real_free(p);
}

int posix_memalign(void** out, size_t align, size_t n) {
  if (real_posix_memalign == NULL) init();
  count(0);
  return real_posix_memalign(out, align, n);
}

void* aligned_alloc(size_t align, size_t n) {
  if (real_aligned_alloc == NULL) init();
  count(0);
  return real_aligned_alloc(align, n);
}

/* operator new / delete (Itanium names), forwarded to the next definition (mimalloc's or
 * libstdc++'s). */
#define FORWARD_NEW(name, params, args)               \
  void* name params {                                 \
    static void*(*next)params;                        \
    if (next == NULL) next = dlsym(RTLD_NEXT, #name); \
    count(0);                                         \
    return next args;                                 \
  }
#define FORWARD_DELETE(name, params, args)            \
  void name params {                                  \
    static void(*next) params;                        \
    if (next == NULL) next = dlsym(RTLD_NEXT, #name); \
    if (p != NULL) count(1);                          \
    next args;                                        \
  }
FORWARD_NEW(_Znwm, (size_t n), (n))
FORWARD_NEW(_Znam, (size_t n), (n))
FORWARD_NEW(_ZnwmSt11align_val_t, (size_t n, size_t a), (n, a))
FORWARD_NEW(_ZnamSt11align_val_t, (size_t n, size_t a), (n, a))
FORWARD_NEW(_ZnwmRKSt9nothrow_t, (size_t n, const void* t), (n, t))
FORWARD_NEW(_ZnamRKSt9nothrow_t, (size_t n, const void* t), (n, t))
FORWARD_DELETE(_ZdlPv, (void* p), (p))
FORWARD_DELETE(_ZdaPv, (void* p), (p))
FORWARD_DELETE(_ZdlPvm, (void* p, size_t n), (p, n))
FORWARD_DELETE(_ZdaPvm, (void* p, size_t n), (p, n))
FORWARD_DELETE(_ZdlPvSt11align_val_t, (void* p, size_t a), (p, a))
FORWARD_DELETE(_ZdlPvmSt11align_val_t, (void* p, size_t n, size_t a), (p, n, a))
