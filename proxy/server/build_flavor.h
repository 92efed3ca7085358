#pragma once
// Which build of ferry this is: "plain" for an ordinary cmake build, "release-pgo" for the
// release build (scripts/build-release.sh: profile-guided, trained by scripts/pgo-train.sh,
// link-time optimised, libevent, nghttp2 and OpenSSL linked statically unless
// RELEASE_STATIC_DEPS=OFF).
// Set with the CMake cache variable FERRY_BUILD_FLAVOR (proxy/server/CMakeLists.txt). Shown by
// `ferry --version` and as the `flavor` label of ferry_build_info, so that an operator (or the
// container image's check, docker/test-compose.sh) can tell a release binary from a plain one:
// their per-request CPU differs by ~7-10 % (bench/README.md "Release build").

namespace ferry::server {

const char* buildFlavor();

}  // namespace ferry::server
