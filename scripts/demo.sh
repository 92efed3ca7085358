#!/usr/bin/env bash
# ferry's main job on an embedded default: installs what is missing, builds, starts a local cell
# of 4 emulated Streams instances each with a ferry in front, sends a short workload to random
# instances and prints what was forwarded. Extra arguments go to ferry-demo
# (--members N --streams N --appends N --seed N; --tls: the https cell, mTLS between ferries,
# the client talking https to them with the cell's test CA).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target ferry ferry-demo streams-emulator
exec "$BUILD_DIR/integration/demo/ferry-demo" "$@"
