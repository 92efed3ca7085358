#pragma once
// Whether this build runs under a sanitizer (scripts/sanitize.sh, scripts/fuzz.sh). Tests that
// bound memory (RSS assertions) skip that bound there: ASan's shadow memory and its quarantine
// of freed blocks (256 MiB by default), and TSan's shadow, are resident in every process of
// the build, ferry included, so a bound measured without them cannot hold.
//
//   if (kMemoryInflatedBySanitizer) GTEST_SKIP() << kSanitizerSkipReason;

namespace ferry {

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define FERRY_SANITIZER_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)  // gcc's spelling
#ifndef FERRY_SANITIZER_BUILD
#define FERRY_SANITIZER_BUILD 1
#endif
#endif

#ifdef FERRY_SANITIZER_BUILD
inline constexpr bool kMemoryInflatedBySanitizer = true;
#else
inline constexpr bool kMemoryInflatedBySanitizer = false;
#endif

inline constexpr const char* kSanitizerSkipReason =
    "memory bound not checked under a sanitizer: its shadow memory and quarantine are resident "
    "too (tests/support/sanitizers.h)";

}  // namespace ferry
