#include "proxy/http/http1/byte_search.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace ferry::http::http1 {

namespace {

constexpr bool isNulCrLf(char c) { return c == '\0' || c == '\r' || c == '\n'; }
constexpr bool isNulCrLfOrBlank(char c) { return isNulCrLf(c) || c == ' ' || c == '\t'; }

#ifdef __SSE2__
// One bit per byte of the 16 at `p`: set where the byte equals one of `targets`.
template <typename... Targets>
int matchMask(const char* p, Targets... targets) {
  const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  __m128i hits = _mm_setzero_si128();
  ((hits = _mm_or_si128(hits, _mm_cmpeq_epi8(block, _mm_set1_epi8(targets)))), ...);
  return _mm_movemask_epi8(hits);
}
#endif

// The index of the first byte in `bytes` for which `is_target` holds. Whole 16-byte blocks are
// compared with `targets` (the same set) at once; the rest, and every byte without SSE2, one at
// a time. `highest` is the largest target byte: all targets are control characters or SP, so
// one comparison against it passes over nearly every byte of text.
template <typename Predicate, typename... Targets>
size_t findFirst(std::string_view bytes, Predicate is_target, unsigned char highest,
                 Targets... targets) {
  const char* p = bytes.data();
  const size_t n = bytes.size();
  size_t i = 0;
#ifdef __SSE2__
  // Unaligned loads of whole blocks only: never a byte past the end.
  for (; i + 16 <= n; i += 16) {
    if (int mask = matchMask(p + i, targets...); mask != 0) {
      return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
  }
#endif
  for (; i < n; ++i) {
    if (static_cast<unsigned char>(p[i]) <= highest && is_target(p[i])) return i;
  }
  return n;
}

}  // namespace

size_t findNulCrLf(std::string_view bytes) {
  return findFirst(bytes, isNulCrLf, '\r', '\0', '\r', '\n');
}

size_t findNulCrLfOrBlank(std::string_view bytes) {
  return findFirst(bytes, isNulCrLfOrBlank, ' ', '\0', '\r', '\n', ' ', '\t');
}

}  // namespace ferry::http::http1
