#!/usr/bin/env bash
# Installs what is missing (Debian packages), builds everything and runs every test:
# unit tests, integration tests with real processes on 127.0.0.1, and the Durable Streams
# conformance suite through ferry (npm packages pinned in integration/conformance/); then a
# short bounded run of each fuzz target in a second, clang build (scripts/fuzz.sh; FERRY_FUZZ=0
# skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$BUILD_DIR" -j"$(nproc)"
if ! ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" --timeout 600; then
  # The end of each failed test's output again, last: a CI log is read from its end.
  python3 scripts/failed-test-tails.py "$BUILD_DIR" 20
  exit 1
fi
[ "${FERRY_FUZZ:-1}" = 0 ] || bash scripts/fuzz.sh
