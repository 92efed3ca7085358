#pragma once
// Copying the short strings of a message head: field names and most values are under 16
// bytes, and a call into libc's memcpy costs more than the copy itself. Used where heads are
// built byte by byte: HeaderMap::store (every field of every head) and the HTTP/1 head
// encoders' field writer.

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ferry::http {

namespace copy_bytes_detail {

// Copies n bytes, sizeof(Word) <= n <= 2 * sizeof(Word), as the first and the last Word of the
// range (they overlap in the middle when n is not 2 * sizeof(Word)): two loads, two stores.
template <class Word>
inline void copyHeadAndTail(char* dst, const char* src, size_t n) {
  Word head;
  Word tail;
  std::memcpy(&head, src, sizeof(head));
  std::memcpy(&tail, src + n - sizeof(tail), sizeof(tail));
  std::memcpy(dst, &head, sizeof(head));
  std::memcpy(dst + n - sizeof(tail), &tail, sizeof(tail));
}

}  // namespace copy_bytes_detail

// Copies `n` bytes from `src` to `dst` (the two ranges do not overlap). Up to 16 bytes with two
// loads and two stores (the pair overlaps in the middle when n is not a power of two); longer
// copies go to memcpy.
inline void copyBytes(char* dst, const char* src, size_t n) {
  if (n > 16) {
    std::memcpy(dst, src, n);
  } else if (n >= 8) {
    copy_bytes_detail::copyHeadAndTail<uint64_t>(dst, src, n);
  } else if (n >= 4) {
    copy_bytes_detail::copyHeadAndTail<uint32_t>(dst, src, n);
  } else if (n > 0) {
    const char first = src[0];
    const char middle = src[n / 2];
    const char last = src[n - 1];
    dst[0] = first;
    dst[n / 2] = middle;
    dst[n - 1] = last;
  }
}

}  // namespace ferry::http
