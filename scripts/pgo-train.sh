#!/usr/bin/env bash
# The training run of the release build (scripts/build-release.sh): drives a profiling
# (-fprofile-generate) ferry the way a Streams fleet does, so the compiler learns which code is
# hot. A two-member cell (integration/cell: ferry-cell, two streams-emulators, a ferry in front
# of each, owner forwarding between them) gets, through one ferry, appends and reads of 32
# streams, half of them owned by the other member (a 409 from the local instance, then a
# forward): over HTTP/1.1 keep-alive and over h2c, with h2load (Debian's nghttp2-client).
# Deliberately not the pass-through bench's workload (bench/passthrough: GET / from nginx):
# the profile is the product's traffic, and the bench measures what that build does elsewhere.
#
#   scripts/pgo-train.sh BUILD_DIR [REQUESTS]
#
# BUILD_DIR has ferry, ferry-cell and streams-emulator built. REQUESTS per phase (default
# 20000). Exits non-zero when a phase got an error or a non-2xx answer where one was not
# expected, so a broken training run cannot pass as a profile.
set -euo pipefail
BUILD_DIR=$(cd "${1:?usage: pgo-train.sh BUILD_DIR [REQUESTS]}" && pwd)
REQUESTS=${2:-20000}
FERRY=$BUILD_DIR/app/ferry
CELL=$BUILD_DIR/integration/cell/ferry-cell
for b in "$FERRY" "$CELL"; do
  [ -x "$b" ] || { echo "pgo-train: $b is not built" >&2; exit 2; }
done
# The programs this script runs besides the build's (and bash's usual coreutils, sed, grep,
# awk): h2load (Debian's nghttp2-client) and curl. docker/Dockerfile's build stage installs their
# packages; docker/run_without_engine.py checks it against this line.
TOOLS=(h2load curl)
for t in "${TOOLS[@]}"; do
  command -v "$t" >/dev/null || { echo "pgo-train: $t missing (${TOOLS[*]}: nghttp2-client, curl)" >&2; exit 2; }
done

WORK=$(mktemp -d)
CELL_PID=""
cleanup() {
  # SIGTERM: the cell drains and stops its ferries, which write their profile as they exit.
  if [ -n "$CELL_PID" ] && kill -0 "$CELL_PID" 2>/dev/null; then
    kill -TERM "$CELL_PID"
    wait "$CELL_PID" || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

"$CELL" --members 2 --ferry "$FERRY" --dir "$WORK/cell" >"$WORK/cell.out" 2>&1 &
CELL_PID=$!
for _ in $(seq 1 200); do
  grep -q "ferry-cell ready" "$WORK/cell.out" && break
  kill -0 "$CELL_PID" 2>/dev/null || { cat "$WORK/cell.out" >&2; exit 1; }
  sleep 0.1
done
grep -q "ferry-cell ready" "$WORK/cell.out" || { echo "pgo-train: no cell" >&2; exit 1; }
BASE=$(sed -n 's/^ferry-cell member inst-1 .* url=\(http:[^ ]*\).*/\1/p' "$WORK/cell.out")

# 32 JSON streams, created through inst-1's ferry (those owned by inst-2 are forwarded).
URIS=()
for i in $(seq 1 32); do
  status=$(curl -s -o /dev/null -w '%{http_code}' -X PUT \
    -H 'content-type: application/json' "$BASE/v1/stream/train-$i")
  case "$status" in 200|201) ;; *) echo "pgo-train: PUT train-$i: $status" >&2; exit 1;; esac
  URIS+=("$BASE/v1/stream/train-$i?offset=now")
done
printf '{"event":"train","n":1}' >"$WORK/append.json"

# h2load phase: all requests must complete with 2xx.
phase() {
  local name=$1
  shift
  local out
  out=$(h2load "$@" 2>&1) || { echo "pgo-train: $name: h2load failed" >&2; echo "$out" >&2; exit 1; }
  if ! grep -q " 0 failed, 0 errored" <<<"$out" || grep -q "status codes: .* [1-9][0-9]* 4xx" <<<"$out" \
     || grep -q "[1-9][0-9]* 5xx" <<<"$out"; then
    echo "pgo-train: $name: errors or non-2xx answers" >&2
    echo "$out" | grep -E "requests:|status codes:" >&2
    exit 1
  fi
  echo "pgo-train: $name: $(grep -o 'requests: .*succeeded' <<<"$out")"
}
APPEND=(-d "$WORK/append.json" -H 'content-type: application/json')
phase "HTTP/1.1 appends" --h1 -n "$REQUESTS" -c 16 "${APPEND[@]}" "${URIS[@]}"
phase "HTTP/1.1 reads" --h1 -n "$REQUESTS" -c 16 "${URIS[@]}"
phase "h2c appends" -n "$REQUESTS" -c 4 -m 8 "${APPEND[@]}" "${URIS[@]}"
phase "h2c reads" -n "$REQUESTS" -c 4 -m 8 "${URIS[@]}"

# Half the streams live on inst-2: the forwarding path must have been trained too.
ADMIN=$(sed -n 's/^ferry-cell member inst-1 .* admin=\([^ ]*\).*/\1/p' "$WORK/cell.out")
forwards=$(curl -s "http://$ADMIN/stats" |
  awk '/^ferry_forward_completed_total/ {n += $2} END {print n + 0}')
[ "$forwards" -gt 0 ] || { echo "pgo-train: no request was forwarded" >&2; exit 1; }
echo "pgo-train: $forwards requests forwarded between the two ferries"
