#!/usr/bin/env bash
# One command for every ferry benchmark: pass-through, forwarded requests, the cell bench and,
# when present, the SSE bench; then bench/results/summary.{md,json} and the PNG plots.
#
#   bench/run.sh [--quick|--full] [--rebuild] [--build DIR] [--ferry PATH] [--out DIR] [--only LIST]
#
#   --quick   short runs of everything, < 5 minutes in total (the default)
#   --full    the benches' default lengths (~22 minutes)
#   --rebuild configure + build the bench targets in --build first (cmake/ninja, -j1)
#   --build   build dir with ferry, streams-emulator, ferry-cell, cell-loadgen,
#             cell-delay-relay (default build-benchall)
#   --ferry   ferry binary (default BUILD/app/ferry)
#   --out     results dir (default bench/results)
#   --only    comma list of passthrough,forwarded,cell,sse (default all)
#
# Plots need matplotlib for the Debian python (/usr/bin/python3: apt-get install
# python3-matplotlib); override with PYTHON=... . Checked before anything runs.
# See bench/README.md, "Everything at once".
set -u -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
MODE=quick
BUILD="$REPO/build-benchall"
FERRY=""
OUT="$REPO/bench/results"
ONLY="passthrough,forwarded,cell,sse"
REBUILD=0
PYTHON="${PYTHON:-/usr/bin/python3}"

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) MODE=quick ;;
    --full) MODE=full ;;
    --rebuild) REBUILD=1 ;;
    --build) BUILD="$2"; shift ;;
    --ferry) FERRY="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    --only) ONLY="$2"; shift ;;
    -h|--help) usage 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; usage 2 ;;
  esac
  shift
done
BUILD="$(cd "$BUILD" 2>/dev/null && pwd || echo "$BUILD")"
[ -n "$FERRY" ] || FERRY="$BUILD/app/ferry"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

# Plotting is part of the job: fail now, clearly, rather than after the benches.
if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
  echo "run.sh: $PYTHON cannot import matplotlib; the plots need it." >&2
  echo "        install it:  apt-get install python3-matplotlib   (or set PYTHON=...)" >&2
  exit 2
fi

STATUS="$OUT/run_status.tsv"   # name, status, seconds, command, note
: > "$STATUS"
LOGDIR="$OUT/logs"
mkdir -p "$LOGDIR"
MARK="$(mktemp)"   # files older than this are from an earlier run
trap 'rm -f "$MARK"' EXIT
FAILED=0
QUICK_FLAG=()
[ "$MODE" = quick ] && QUICK_FLAG=(--quick)

want() { case ",$ONLY," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
say() { echo "[$(date +%H:%M:%S)] run.sh: $*" >&2; }
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >> "$STATUS"; }

# run NAME CMD...: runs one bench, stdout+stderr to $LOGDIR/NAME.log (and the terminal).
run() {
  local name="$1"; shift
  say "$name: $*"
  local t0=$(date +%s) rc
  "$@" 2>&1 | tee "$LOGDIR/$name.log"
  rc=${PIPESTATUS[0]}
  local dt=$(( $(date +%s) - t0 ))
  if [ "$rc" -eq 0 ]; then
    record "$name" ok "$dt" "$*" ""
  else
    record "$name" failed "$dt" "$*" "exit $rc; see logs/$name.log"
    FAILED=1
    say "$name FAILED (exit $rc), see $LOGDIR/$name.log"
  fi
}
skip() { record "$1" skipped 0 "" "$2"; say "$1 skipped: $2"; }

TARGETS="ferry streams-emulator ferry-cell cell-loadgen cell-delay-relay"
[ -f "$REPO/bench/sse/CMakeLists.txt" ] && TARGETS="$TARGETS sse-bench floor-relay"
if [ "$REBUILD" = 1 ]; then
  say "building $TARGETS in $BUILD"
  if ! { cmake -S "$REPO" -B "$BUILD" -G Ninja >/dev/null &&
         cmake --build "$BUILD" --target $TARGETS -j1; }; then
    echo "run.sh: build failed" >&2
    exit 1
  fi
fi

START=$(date +%s)   # the benches' clock (a --rebuild is not counted)
missing=()
for b in "$FERRY" "$BUILD/integration/cell/ferry-cell" \
         "$BUILD/integration/streams_emulator/streams-emulator"; do
  [ -x "$b" ] || missing+=("$b")
done
BUILD_HINT="cmake -S $REPO -B $BUILD -G Ninja && cmake --build $BUILD --target ferry streams-emulator ferry-cell cell-loadgen cell-delay-relay sse-bench floor-relay -j1"

if want passthrough; then
  if [ -x "$FERRY" ]; then
    run passthrough "$REPO/bench/passthrough/run.py" "${QUICK_FLAG[@]}" --ferry "$FERRY" --out "$OUT"
  else
    skip passthrough "no ferry binary at $FERRY ($BUILD_HINT)"
  fi
fi

if want forwarded; then
  if [ ${#missing[@]} -eq 0 ]; then
    run forwarded "$REPO/bench/forwarded/run.py" "${QUICK_FLAG[@]}" --build "$BUILD" \
      --ferry "$FERRY" --out "$OUT"
  else
    skip forwarded "missing ${missing[*]} ($BUILD_HINT)"
  fi
fi

if want cell; then
  cmissing=("${missing[@]}")
  for b in "$BUILD/bench/cell/cell-loadgen" "$BUILD/bench/cell/cell-delay-relay"; do
    [ -x "$b" ] || cmissing+=("$b")
  done
  if [ ${#cmissing[@]} -eq 0 ]; then
    # --h2 on: the arm ferry-h2 (https + HTTP/2 between the ferries, issue 13).
    run cell "$REPO/bench/cell/run.py" "${QUICK_FLAG[@]}" --build "$BUILD" --ferry "$FERRY" \
      --h2 on --out "$OUT"
  else
    skip cell "missing ${cmissing[*]} ($BUILD_HINT)"
  fi
fi

if want sse; then
  SSE="$REPO/bench/sse/run.py"
  if [ -f "$SSE" ] && { [ ! -x "$BUILD/bench/sse/sse-bench" ] || [ ! -x "$BUILD/bench/sse/floor-relay" ]; }; then
    skip sse "no $BUILD/bench/sse/sse-bench or floor-relay (cmake --build $BUILD --target sse-bench floor-relay)"
  elif [ -f "$SSE" ] && [ ${#missing[@]} -gt 0 ]; then
    skip sse "missing ${missing[*]} ($BUILD_HINT)"
  elif [ -f "$SSE" ]; then
    # Written by someone else: pass only the flags its --help lists.
    help="$(python3 "$SSE" --help 2>&1 || true)"
    args=()
    [ "$MODE" = quick ] && grep -q -- '--quick' <<<"$help" && args+=(--quick)
    grep -q -- '--out' <<<"$help" && args+=(--out "$OUT")
    grep -q -- '--build' <<<"$help" && args+=(--build "$BUILD")
    grep -q -- '--ferry' <<<"$help" && args+=(--ferry "$FERRY")
    run sse python3 "$SSE" "${args[@]}"
    # If it did not write sse.md itself, its stdout is the report.
    if [ ! -f "$OUT/sse.md" ] || [ "$OUT/sse.md" -ot "$MARK" ]; then
      grep -v '^\[' "$LOGDIR/sse.log" > "$OUT/sse.md" || true
    fi
  else
    skip sse "bench/sse/run.py does not exist (yet)"
  fi
fi

TOTAL=$(( $(date +%s) - START ))
say "benches done in ${TOTAL} s; writing summary and plots"
if ! "$PYTHON" "$HERE/report.py" --out "$OUT" --mode "$MODE" --status "$STATUS" \
     --elapsed "$TOTAL" --ferry "$FERRY"; then
  say "report/plots FAILED"
  FAILED=1
fi
plots=""
for f in "$OUT/cell_appends.png" "$OUT/latency.png"; do [ -f "$f" ] && plots="$plots $f"; done
say "summary: $OUT/summary.md, $OUT/summary.json; plots:${plots:- none}"
awk -F'\t' '$2 != "ok" { printf "run.sh: %s %s: %s\n", toupper($2), $1, $5 }' "$STATUS" >&2
exit $FAILED
