#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, clang, ASan + UBSan) in their own build directory
# and runs each one for a short bounded time as ctest label "fuzz" (tests/fuzz/README.md).
# Only the fuzz targets and the libraries they link are built, not the whole tree.
#
#   scripts/fuzz.sh                   the short runs scripts/test.sh does (FUZZ_SECONDS each)
#   FUZZ_SECONDS=600 scripts/fuzz.sh  longer runs of every target
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-8}
launcher=()
command -v ccache >/dev/null 2>&1 &&
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFERRY_FUZZ=ON -DFERRY_FUZZ_SECONDS="$FUZZ_SECONDS" "${launcher[@]}"
cmake --build "$BUILD_DIR" -j"$JOBS" --target ferry_fuzz
# A report from UBSan is a crash libFuzzer keeps (the targets build with -fno-sanitize-recover).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$JOBS" -L '^fuzz$' --timeout $((FUZZ_SECONDS * 4 + 120))
