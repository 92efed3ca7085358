#!/usr/bin/env bash
# The release build of ferry: profile-guided (GCC -fprofile-generate / -fprofile-use), with
# mimalloc. What it is for: ferry's per-request CPU on a busy proxy is dominated less by the
# instructions it runs than by where they sit: callgrind counts ~33k instructions per h2c
# request for ferry against ~43k for HAProxy, yet ~1,380 instruction-cache misses against ~850.
# A profile lets GCC lay the hot paths out together, split cold code off and inline along
# them; on the pass-through bench that made ferry's user time per h2c request ~9% smaller
# (bench/README.md "Release build"). The training run is scripts/pgo-train.sh (a cell of
# streams-emulators behind two ferries, not the bench's workload). On top of the profile:
# link-time optimisation (RELEASE_LTO=OFF to leave it out) and libevent/nghttp2 from Debian's
# static archives (RELEASE_STATIC_DEPS=OFF: shared; root CMakeLists.txt says what static costs); together
# callgrind counts 10 % fewer instructions and 9 % fewer I-cache misses per h2c request.
# OpenSSL's archives too (same option): an idle ferry holds 0.75 MiB less resident memory
# without TLS, 1.15 MiB less with a TLS listener (bench/README "Memory (RSS)").
#
#   scripts/build-release.sh [BUILD_DIR]      default build-release; the binary is
#                                             BUILD_DIR/app/ferry
#
# Two builds in the same folder (the profile files sit next to the objects that wrote them):
# instrumented, train, then optimised with the profile. Tests are not built here: they run on
# the plain build (scripts/test.sh); this build's ferry passes the same tests (docs/building.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build-release}
JOBS=${JOBS:-$(nproc)}
TARGETS=(ferry ferry-cell streams-emulator)

# FERRY_BUILD_FLAVOR: `ferry --version` and ferry_build_info{flavor} say "release-pgo" (the same
# in both builds, so that the sources the profile was taken from are the sources it is used on).
configure() {  # configure FLAGS: the flags of both C and C++ compilations
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFERRY_STATIC_DEPS=${RELEASE_STATIC_DEPS:-ON} \
    -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=${RELEASE_LTO:-ON} -DFERRY_BUILD_FLAVOR=release-pgo \
    -DCMAKE_C_FLAGS="$1" -DCMAKE_CXX_FLAGS="$1" >/dev/null
}

# 1. Instrumented. Atomic counters: ferry's workers run on several threads.
find "$BUILD_DIR" -name '*.gcda' -delete 2>/dev/null || true
configure "-fprofile-generate -fprofile-update=atomic"
cmake --build "$BUILD_DIR" -j"$JOBS" --target "${TARGETS[@]}"
# 2. Training: the ferries write their *.gcda files as they exit.
bash scripts/pgo-train.sh "$BUILD_DIR" "${PGO_REQUESTS:-20000}"
count=$(find "$BUILD_DIR" -name '*.gcda' | wc -l)
[ "$count" -gt 0 ] || { echo "build-release: the training wrote no profile" >&2; exit 1; }
# 3. Optimised with the profile. Code the training never ran is optimised as usual
# (-fprofile-partial-training) rather than for size; sources without a profile (tools not
# run) are not an error.
configure "-fprofile-use -fprofile-partial-training -Wno-missing-profile"
cmake --build "$BUILD_DIR" -j"$JOBS" --target "${TARGETS[@]}"
# The static archives must have replaced the shared libraries (a stale cache or a CMake change
# could silently bring them back).
if [ "${RELEASE_STATIC_DEPS:-ON}" = ON ] \
    && ldd "$BUILD_DIR/app/ferry" | grep -qE 'libevent|libnghttp2|libssl|libcrypto'; then
  echo "build-release: ferry still loads libevent, libnghttp2 or OpenSSL as a shared library" >&2
  exit 1
fi
echo "build-release: $BUILD_DIR/app/ferry (profile from $count files)"
