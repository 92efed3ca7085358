#pragma once
// ferry's version: `ferry --version` and ferry_build_info{version} on /stats.

namespace ferry::server {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace ferry::server
