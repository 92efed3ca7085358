#!/usr/bin/env bash
# Where does ferry's time go? Runs ferry (workers: 1) in front of the bench origin, pushes a
# fixed number of requests through it with wrk, samples it with perf (or callgrind) and prints
# the top functions.
#
#   bench/passthrough/profile.sh --ferry build/proxy/server/ferry [--requests N]
#       [--workload get|post1k] [--tool perf|callgrind] [--callgraph dwarf|fp] [--top K]
#       [--out DIR]
#
# perf: attaches to the running ferry after a 1 s warm-up, so only the steady state is
#   sampled. Hardware counters are not available on this VM, so it samples the cpu-clock
#   software event. Call graphs default to DWARF unwinding (RelWithDebInfo builds usually lack
#   frame pointers). Output: DIR/perf.data plus the flat "self" profile and a caller tree.
# callgrind: ferry runs under valgrind from start (~50x slower; default 20000 requests);
#   output: DIR/callgrind.out plus callgrind_annotate's top functions (instruction counts).
# Without --tool it uses perf if `perf record -e cpu-clock true` works, else callgrind.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
FERRY=""
REQUESTS=""
WORKLOAD=get
TOOL=""
CALLGRAPH=dwarf
TOP=40
CONNS=32
OUT="$REPO/bench/results/profile"

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ferry) FERRY="$2"; shift 2;;
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

if [ -z "$FERRY" ] || [ "$FERRY" = auto ]; then
  FERRY="$(ls -t "$REPO"/build*/proxy/server/ferry 2>/dev/null | head -1 || true)"
fi
[ -n "$FERRY" ] && [ -x "$FERRY" ] || { echo "profile.sh: no ferry binary (use --ferry PATH)" >&2; exit 2; }
FERRY="$(readlink -f "$FERRY")"

if [ -z "$TOOL" ]; then
  if perf record -q -e cpu-clock -o /dev/null -- true >/dev/null 2>&1; then TOOL=perf; else TOOL=callgrind; fi
fi
case "$TOOL" in
  perf) REQUESTS="${REQUESTS:-300000}";;
  callgrind) REQUESTS="${REQUESTS:-20000}";;
  *) echo "--tool must be perf or callgrind" >&2; exit 2;;
esac

mkdir -p "$OUT"
OUT="$(readlink -f "$OUT")"
TMP="$(mktemp -d /tmp/ferry-profile-XXXXXX)"
ORIGIN_PID=""; FERRY_PID=""; PERF_PID=""
cleanup() {
  [ -n "$PERF_PID" ] && kill -INT "$PERF_PID" 2>/dev/null && wait "$PERF_PID" 2>/dev/null || true
  [ -n "$FERRY_PID" ] && kill -TERM "$FERRY_PID" 2>/dev/null && wait "$FERRY_PID" 2>/dev/null || true
  [ -n "$ORIGIN_PID" ] && kill -TERM "$ORIGIN_PID" 2>/dev/null && wait "$ORIGIN_PID" 2>/dev/null || true
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

# 1. Origin (same nginx origin as run.py).
python3 "$HERE/run.py" --serve-origin >"$TMP/origin.out" 2>"$TMP/origin.err" &
ORIGIN_PID=$!
wait_line "$TMP/origin.out" "origin ready" 15
UP="$(sed -n 's/.*origin ready port=\([0-9]*\).*/\1/p' "$TMP/origin.out")"

# 2. ferry, one worker.
cat >"$TMP/ferry.yaml" <<EOF
instance_name: bench-1
listener: {address: 127.0.0.1, port: 0}
local_instance: {address: 127.0.0.1, port: $UP}
admin: {address: 127.0.0.1, port: 0}
workers: 1
forwarding: {enabled: false}
EOF
if [ "$TOOL" = callgrind ]; then
  valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
    "$FERRY" --config "$TMP/ferry.yaml" >"$TMP/ferry.out" 2>"$TMP/ferry.err" &
  READY_TIMEOUT=120
else
  "$FERRY" --config "$TMP/ferry.yaml" >"$TMP/ferry.out" 2>"$TMP/ferry.err" &
  READY_TIMEOUT=15
fi
FERRY_PID=$!
wait_line "$TMP/ferry.out" "ferry ready" "$READY_TIMEOUT"
PORT="$(sed -n 's/.*ferry ready listener=[^ ]*:\([0-9]*\) .*/\1/p' "$TMP/ferry.out")"

# 3. wrk scripts: stop after exactly $REQUESTS responses (one wrk thread).
cat >"$TMP/load.lua" <<EOF
local limit, n = $REQUESTS, 0
response = function(status, headers, body)
  n = n + 1
  if n >= limit then wrk.thread:stop() end
end
done = function(summary, latency, requests)
  io.write(string.format("requests=%d duration_s=%.2f non2xx=%d p50_ms=%.3f p99_ms=%.3f\n",
    summary.requests, summary.duration / 1e6, summary.errors.status,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
EOF
if [ "$WORKLOAD" = post1k ]; then
  printf 'wrk.method = "POST"\nwrk.path = "/post"\nwrk.body = string.rep("x", 1024)\nwrk.headers["Content-Type"] = "application/octet-stream"\n' \
    | cat - "$TMP/load.lua" >"$TMP/l2.lua" && mv "$TMP/l2.lua" "$TMP/load.lua"
fi
cpu_ticks() { awk '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }

if [ "$TOOL" = perf ]; then
  wrk -t1 -c"$CONNS" -d1s "http://127.0.0.1:$PORT/" >/dev/null  # warm-up, not sampled
  CG="--call-graph=dwarf,16384"; [ "$CALLGRAPH" = fp ] && CG="-g"
  perf record -q -e cpu-clock -F 1999 $CG -p "$FERRY_PID" -o "$OUT/perf.data" 2>"$TMP/perf.err" &
  PERF_PID=$!
  sleep 0.5
fi
T0="$(cpu_ticks "$FERRY_PID")"
echo "profile.sh: $TOOL, $REQUESTS $WORKLOAD requests, $CONNS connections -> ferry pid $FERRY_PID (port $PORT, origin $UP)"
wrk -t1 -c"$CONNS" -d600s --timeout 10s -s "$TMP/load.lua" "http://127.0.0.1:$PORT/" | tail -1
T1="$(cpu_ticks "$FERRY_PID")"
awk -v t="$((T1 - T0))" -v hz="$(getconf CLK_TCK)" -v n="$REQUESTS" \
  'BEGIN { printf "ferry CPU: %.2f s, %.1f us/request%s\n", t / hz, t / hz * 1e6 / n, "" }'

if [ "$TOOL" = perf ]; then
  kill -INT "$PERF_PID"; wait "$PERF_PID" || true; PERF_PID=""
  kill -TERM "$FERRY_PID"; wait "$FERRY_PID" || true; FERRY_PID=""
  echo; echo "== top $TOP functions by self time (perf report --no-children) =="
  perf report -i "$OUT/perf.data" --stdio --no-children --sort dso,symbol --percent-limit 0.3 \
    -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n "$TOP" | tee "$OUT/top_self.txt"
  echo; echo "== top $TOP by inclusive time (--children), ferry's own code =="
  perf report -i "$OUT/perf.data" --stdio --children --sort symbol --dsos "$(basename "$FERRY")" \
    -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n "$TOP" | tee "$OUT/top_children.txt"
  perf report -i "$OUT/perf.data" --stdio --no-children --sort symbol -g caller,0.5,callee \
    --percent-limit 2 >"$OUT/callgraph.txt" 2>/dev/null || true
  echo; echo "profile.sh: full call graph in $OUT/callgraph.txt; explore with: perf report -i $OUT/perf.data"
else
  kill -TERM "$FERRY_PID"; wait "$FERRY_PID" || true; FERRY_PID=""
  echo; echo "== top $TOP functions by instructions (callgrind_annotate, inclusive off) =="
  callgrind_annotate "$OUT/callgrind.out" 2>/dev/null | head -n "$((TOP + 25))" | tee "$OUT/top_self.txt"
  echo; echo "profile.sh: explore with: callgrind_annotate --inclusive=yes $OUT/callgrind.out"
fi
