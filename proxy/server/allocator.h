#pragma once
// Which malloc serves this process: "mimalloc <version>" when ferry is built with FERRY_MIMALLOC
// (the default: see the root CMakeLists.txt for why), "system" otherwise (sanitizer and fuzz
// builds). Shown by `ferry --version` and as the `allocator` label of ferry_build_info, so an
// operator comparing figures knows which one they measured.

#include <string>

namespace ferry::server {

std::string allocatorName();

}  // namespace ferry::server
