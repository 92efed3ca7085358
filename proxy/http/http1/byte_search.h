#pragma once
// Finding the bytes that matter in a message head: NUL, CR and LF end or poison a line
// (RFC 9112 §2.2, RFC 9110 §5.5), and SP / HTAB separate the parts of a request line
// (RFC 9112 §3). Used by the HeadScanner on every head byte and by the encoders on every field
// value they write, so runs of ordinary bytes are skipped 16 at a time where SSE2 is available
// (every x86-64 CPU); other targets take a plain byte loop with the same results.

#include <cstddef>
#include <string_view>

namespace ferry::http::http1 {

// Index of the first NUL, CR or LF in `bytes`; bytes.size() when there is none.
size_t findNulCrLf(std::string_view bytes);

// Index of the first NUL, CR, LF, SP or HTAB in `bytes`; bytes.size() when there is none.
size_t findNulCrLfOrBlank(std::string_view bytes);

}  // namespace ferry::http::http1
