#!/usr/bin/env bash
# Where does ferry's time go? Runs ferry (workers: 1) in front of the bench origin, pushes a
# fixed number of requests through it with wrk, samples it with perf (or callgrind) and prints
# the top functions, plus syscalls per request.
#
#   bench/passthrough/profile.sh [--ferry PATH|auto] [--target ferry|haproxy|nginx|nghttpx]
#       [--requests N] [--workload get|post1k] [--tool perf|callgrind]
#       [--callgraph dwarf|fp] [--top K] [--connections C] [--out DIR]
#
# perf: attaches to the running proxy after a 1 s warm-up, so only the steady state is
#   sampled. Hardware counters are not available on this VM, so it samples the cpu-clock
#   software event (kernel time shows up as e.g. _raw_spin_unlock_irqrestore: samples taken
#   while interrupts were off land on the re-enable). Call graphs default to DWARF unwinding
#   (RelWithDebInfo builds usually lack frame pointers). Also counts syscalls
#   (raw_syscalls:sys_enter) per request and, in a second short phase, strace -c by syscall.
#   Output: DIR/perf.data, top_*.txt, callgraph.txt, syscalls.txt.
# callgrind: ferry runs under valgrind from start (~50x slower; default 20000 requests);
#   output: DIR/callgrind.out plus callgrind_annotate's top functions (instruction counts).
# Without --tool it uses perf if `perf record -e cpu-clock true` works, else callgrind.
# --target haproxy|nginx|nghttpx profiles a reference proxy (same config as run.py) instead,
# for side-by-side comparison (perf only).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
FERRY=""
TARGET=ferry
REQUESTS=""
WORKLOAD=get
TOOL=""
CALLGRAPH=dwarf
TOP=40
CONNS=32
OUT=""

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ferry) FERRY="$2"; shift 2;;
    --target) TARGET="$2"; shift 2;;
    --requests) REQUESTS="$2"; shift 2;;
    --workload) WORKLOAD="$2"; shift 2;;
    --tool) TOOL="$2"; shift 2;;
    --callgraph) CALLGRAPH="$2"; shift 2;;
    --top) TOP="$2"; shift 2;;
    --connections) CONNS="$2"; shift 2;;
    --out) OUT="$2"; shift 2;;
    -h|--help) usage 0;;
    *) echo "unknown argument: $1" >&2; usage 2;;
  esac
done
case "$TARGET" in ferry|haproxy|nginx|nghttpx) ;; *) echo "bad --target $TARGET" >&2; exit 2;; esac
case "$WORKLOAD" in get|post1k) ;; *) echo "bad --workload $WORKLOAD" >&2; exit 2;; esac
OUT="${OUT:-$REPO/bench/results/profile-$TARGET-$WORKLOAD}"

if [ "$TARGET" = ferry ]; then
  if [ -z "$FERRY" ] || [ "$FERRY" = auto ]; then
    FERRY="$(ls -t "$REPO"/build*/app/ferry 2>/dev/null | head -1 || true)"
  fi
  [ -n "$FERRY" ] && [ -x "$FERRY" ] || { echo "profile.sh: no ferry binary (use --ferry PATH)" >&2; exit 2; }
  FERRY="$(readlink -f "$FERRY")"
fi

if [ -z "$TOOL" ]; then
  if perf record -q -e cpu-clock -o /dev/null -- true >/dev/null 2>&1; then TOOL=perf; else TOOL=callgrind; fi
fi
case "$TOOL" in
  perf) REQUESTS="${REQUESTS:-300000}";;
  callgrind) REQUESTS="${REQUESTS:-20000}"
    [ "$TARGET" = ferry ] || { echo "callgrind only for --target ferry" >&2; exit 2; };;
  *) echo "--tool must be perf or callgrind" >&2; exit 2;;
esac

mkdir -p "$OUT"
OUT="$(readlink -f "$OUT")"
TMP="$(mktemp -d /tmp/ferry-profile-XXXXXX)"
if [ "$TARGET" = ferry ]; then
  # Others rebuild the tree meanwhile: profile (and keep, for perf report's symbols) a copy.
  echo "profile.sh: ferry binary $FERRY (mtime $(date -r "$FERRY" +%F' '%T))"
  cp "$FERRY" "$OUT/ferry"
  FERRY="$OUT/ferry"
fi
SERVE_PID=""; FERRY_PID=""; PERF_PID=""; WRK_PID=""
cleanup() {
  [ -n "$WRK_PID" ] && kill -INT "$WRK_PID" 2>/dev/null && wait "$WRK_PID" 2>/dev/null || true
  [ -n "$PERF_PID" ] && kill -INT "$PERF_PID" 2>/dev/null && wait "$PERF_PID" 2>/dev/null || true
  [ -n "$FERRY_PID" ] && kill -TERM "$FERRY_PID" 2>/dev/null && wait "$FERRY_PID" 2>/dev/null || true
  [ -n "$SERVE_PID" ] && kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

wait_line() {  # file pattern timeout_s
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "profile.sh: timed out waiting for '$2' in $1:" >&2; cat "$1" >&2; return 1
}

# 1. Origin (the same nginx origin as run.py) and, for a reference target, that proxy.
if [ "$TARGET" = ferry ]; then
  python3 "$HERE/run.py" --serve-origin >"$TMP/serve.out" 2>"$TMP/serve.err" &
else
  python3 "$HERE/run.py" --serve-origin --arms "$TARGET" >"$TMP/serve.out" 2>"$TMP/serve.err" &
fi
SERVE_PID=$!
wait_line "$TMP/serve.out" "origin ready" 15
UP="$(sed -n 's/.*origin ready port=\([0-9]*\).*/\1/p' "$TMP/serve.out")"

# 2. The proxy under test, one worker.
if [ "$TARGET" = ferry ]; then
  cat >"$TMP/ferry.yaml" <<EOF
instance_name: bench-1
listener: {address: 127.0.0.1, port: 0}
local_instance: {address: 127.0.0.1, port: $UP}
admin: {address: 127.0.0.1, port: 0}
workers: 1
forwarding: {enabled: false}
EOF
  if [ "$TOOL" = callgrind ]; then
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$OUT/callgrind.out" \
      "$FERRY" --config "$TMP/ferry.yaml" >"$TMP/ferry.out" 2>"$TMP/ferry.err" &
    READY_TIMEOUT=120
  else
    "$FERRY" --config "$TMP/ferry.yaml" >"$TMP/ferry.out" 2>"$TMP/ferry.err" &
    READY_TIMEOUT=15
  fi
  FERRY_PID=$!  # valgrind runs its guest in the same process
  wait_line "$TMP/ferry.out" "ferry ready" "$READY_TIMEOUT"
  PORT="$(sed -n 's/.*ferry ready listener=[^ ]*:\([0-9]*\) .*/\1/p' "$TMP/ferry.out")"
  PIDS="$FERRY_PID"
  BIN="$(basename "$FERRY")"
else
  wait_line "$TMP/serve.out" "proxy ready" 15
  PORT="$(sed -n 's/.*proxy ready .*port=\([0-9]*\) .*/\1/p' "$TMP/serve.out")"
  PIDS="$(sed -n 's/.*proxy ready .*pids=\([0-9,]*\).*/\1/p' "$TMP/serve.out")"
  BIN="$TARGET"
fi

# 3. wrk script: stop after exactly N responses (one wrk thread).
write_lua() {  # limit marker
  {
    if [ "$WORKLOAD" = post1k ]; then
      printf 'wrk.method = "POST"\nwrk.path = "/post"\nwrk.body = string.rep("x", 1024)\n'
      printf 'wrk.headers["Content-Type"] = "application/octet-stream"\n'
    fi
    cat <<EOF
local limit, n = $1, 0
response = function(status, headers, body)
  n = n + 1
  if n == limit then
    wrk.thread:stop()  -- stops this thread's loop; wrk's main thread still sleeps -d, so
    local f = io.open("$2", "w") f:close()  -- tell profile.sh to SIGINT wrk now
  end
end
done = function(summary, latency, requests)
  io.write(string.format("requests=%d non2xx=%d p50_ms=%.3f p99_ms=%.3f\n",
    summary.requests, summary.errors.status,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
EOF
  } >"$TMP/load-$1.lua"
}
run_load() {  # limit -> prints wrk's summary line
  local marker="$TMP/done-$1-$RANDOM"
  write_lua "$1" "$marker"
  wrk -t1 -c"$CONNS" -d3600s --timeout 10s -s "$TMP/load-$1.lua" "http://127.0.0.1:$PORT/" >"$TMP/wrk.out" &
  WRK_PID=$!
  while [ ! -e "$marker" ] && kill -0 "$WRK_PID" 2>/dev/null; do sleep 0.1; done
  kill -INT "$WRK_PID" 2>/dev/null || true
  wait "$WRK_PID" || true
  WRK_PID=""
  grep '^requests=' "$TMP/wrk.out" || { echo "profile.sh: wrk failed:" >&2; cat "$TMP/wrk.out" >&2; exit 1; }
}
cpu_ticks() {  # comma-separated pids -> utime+stime ticks summed
  local t=0 p
  for p in ${1//,/ }; do
    t=$((t + $(awk '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$p/stat")))
  done
  echo "$t"
}

echo "profile.sh: $TOOL, target $TARGET (pids $PIDS, port $PORT, origin $UP), $REQUESTS $WORKLOAD requests, $CONNS connections"
if [ "$TOOL" = perf ]; then
  wrk -t1 -c"$CONNS" -d1s "http://127.0.0.1:$PORT/" >/dev/null  # warm-up, not sampled
  CG="--call-graph=dwarf,16384"; [ "$CALLGRAPH" = fp ] && CG="-g"
  perf record -q -e cpu-clock -F 1999 $CG -p "$PIDS" -o "$OUT/perf.data" 2>"$TMP/perf.err" &
  PERF_PID=$!
  perf stat -x, -e raw_syscalls:sys_enter -p "$PIDS" -o "$TMP/sysc.csv" 2>/dev/null &
  STAT_PID=$!
  sleep 0.5
fi
T0="$(cpu_ticks "$PIDS")"
run_load "$REQUESTS"
T1="$(cpu_ticks "$PIDS")"
awk -v t="$((T1 - T0))" -v hz="$(getconf CLK_TCK)" -v n="$REQUESTS" -v tool="$TOOL" \
  'BEGIN { printf "%s CPU: %.2f s, %.1f us/request%s\n", "target", t / hz, t / hz * 1e6 / n,
           tool == "callgrind" ? " (under valgrind: not comparable)" : " (while sampled)" }'

if [ "$TOOL" = perf ]; then
  kill -INT "$PERF_PID" "$STAT_PID" 2>/dev/null || true
  wait "$PERF_PID" || true; PERF_PID=""
  wait "$STAT_PID" || true
  SYSC="$(awk -F, '/raw_syscalls/ { print $1 }' "$TMP/sysc.csv")"
  # Breakdown by syscall: a second, short phase under strace (slow, but the counts are exact).
  SN=$((REQUESTS / 10)); [ "$SN" -gt 20000 ] && SN=20000
  STRACE_ARGS=(); for p in ${PIDS//,/ }; do STRACE_ARGS+=(-p "$p"); done
  strace -c -f -o "$TMP/strace.txt" "${STRACE_ARGS[@]}" 2>/dev/null &
  STRACE_PID=$!
  sleep 0.5
  run_load "$SN" >/dev/null
  kill -INT "$STRACE_PID" 2>/dev/null || true; wait "$STRACE_PID" || true
  {
    awk -v s="$SYSC" -v n="$REQUESTS" 'BEGIN { if (s != "") printf "syscalls: %d in %d requests = %.2f per request (perf stat)\n", s, n, s / n }'
    echo "by syscall, $SN requests under strace -c (calls / $SN = per request):"
    awk -v n="$SN" '/^ *[0-9]/ && NF >= 5 { name = $NF; calls = (NF == 6 ? $4 : $4);
      if (name != "total") printf "  %-16s %8d calls  %6.2f/req\n", name, calls, calls / n }' "$TMP/strace.txt" | head -15
  } | tee "$OUT/syscalls.txt"
  if [ -n "$FERRY_PID" ]; then kill -TERM "$FERRY_PID"; wait "$FERRY_PID" || true; FERRY_PID=""; fi

  STRIP='s/[[:space:]]+-[[:space:]]+-[[:space:]]*$//'  # empty IPC columns (no HW counters here)
  echo; echo "== where the samples fall, by binary (perf report --sort dso) =="
  perf report -i "$OUT/perf.data" --stdio --no-children --sort dso -g none 2>/dev/null \
    | grep -v '^#' | grep -v '^$' | sed -E "$STRIP" | head -n 8 | tee "$OUT/top_dso.txt"
  echo; echo "== top $TOP functions by self time (perf report --no-children) =="
  perf report -i "$OUT/perf.data" --stdio --no-children --sort dso,symbol --percent-limit 0.3 \
    -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | sed -E "$STRIP" | head -n "$TOP" | tee "$OUT/top_self.txt"
  echo; echo "== top $TOP by inclusive time (--children), symbols in $BIN =="
  perf report -i "$OUT/perf.data" --stdio --children --sort symbol --dsos "$BIN" \
    -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | grep -v '\] 0x0000' | sed -E "$STRIP" \
    | head -n "$TOP" | tee "$OUT/top_children.txt"
  perf report -i "$OUT/perf.data" --stdio --no-children --sort symbol -g caller,0.5,callee \
    --percent-limit 2 >"$OUT/callgraph.txt" 2>/dev/null || true
  echo; echo "profile.sh: outputs in $OUT; explore with: perf report -i $OUT/perf.data"
else
  kill -TERM "$FERRY_PID"; wait "$FERRY_PID" || true; FERRY_PID=""
  echo; echo "== top functions by instructions (callgrind_annotate) =="
  callgrind_annotate "$OUT/callgrind.out" 2>/dev/null | head -n "$((TOP + 25))" | tee "$OUT/top_self.txt"
  echo; echo "profile.sh: explore with: callgrind_annotate --inclusive=yes $OUT/callgrind.out"
fi
