#!/usr/bin/env bash
# Protocol transparency checks for ferry (issue 6): ferry with nothing to do must be
# invisible. Runs the public Durable Streams server conformance suite against the reference
# server directly and through a proxy, fails on any per-test difference, then runs real
# clients (curl, @durable-streams/client), a streaming-latency check and an idle keep-alive
# race through the proxy.
#
# Usage: run.sh [--proxy ferry|nghttpx|haproxy] [--ferry PATH] [--only all|conformance|clients]
#               [--h2-tls --certs-tool PATH]
#   --proxy    what sits in front of the reference server (default ferry; nghttpx and
#              haproxy are stand-ins to check this harness while ferry is being built)
#   --ferry    ferry binary (default $FERRY_BIN, else <repo>/build/app/ferry)
#   --only     conformance: suite direct vs through the proxy
#              clients: curl, TS client, latency, keep-alive race
#   --h2-tls   (ferry, conformance) the suite reaches ferry over TLS + HTTP/2: ferry's listener
#              gets a test certificate (made by --certs-tool, integration/certs'
#              ferry-test-certs), the suite's fetch an undici Agent({allowH2: true})
#              (h2-setup.mjs); afterwards ferry's counters must show HTTP/2 connections and no
#              HTTP/1.1 request.
# Env: CONFORMANCE_SUBSCRIPTIONS=1 also runs the suite's optional subscription API tests.
#      CONFORMANCE_KEEP_LOGS=1 keeps the work dir even when everything passed.
# Every process started here is stopped on exit (trap EXIT). Ports all come from port 0
# except nghttpx/haproxy's frontend, which take a port probed free just before.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
proxy_kind=ferry
ferry_bin="${FERRY_BIN:-$repo/build/app/ferry}"
only=all
h2_tls=0
certs_tool=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --proxy) proxy_kind="$2"; shift 2 ;;
    --ferry) ferry_bin="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --h2-tls) h2_tls=1; shift ;;
    --certs-tool) certs_tool="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

fail() { echo "FAIL: $*" >&2; exit 1; }
log() { echo "[conformance] $*"; }

case "$proxy_kind" in
  ferry)
    [[ -x "$ferry_bin" ]] || fail "ferry binary not found or not executable: $ferry_bin (build target 'ferry' first)" ;;
  nghttpx) command -v nghttpx >/dev/null || fail "nghttpx not installed" ;;
  haproxy) command -v haproxy >/dev/null || fail "haproxy not installed" ;;
  *) fail "unknown --proxy $proxy_kind" ;;
esac
case "$only" in all|conformance|clients) ;; *) fail "unknown --only $only" ;; esac
if [[ $h2_tls -eq 1 ]]; then
  [[ "$proxy_kind" == ferry && "$only" == conformance ]] || fail "--h2-tls goes with --proxy ferry --only conformance"
  [[ -x "$certs_tool" ]] || fail "--h2-tls needs --certs-tool PATH (build target 'ferry-test-certs')"
fi
command -v node >/dev/null || fail "node not installed (Debian 12: apt-get install nodejs npm)"
command -v npm >/dev/null || fail "npm not installed (Debian 12: apt-get install npm)"
# The pinned toolchain (vitest 4 on vite 6) runs on Node 18 (Debian 12's) and later; an older
# node would fail every suite start with an obscure import error, so say what to install.
node_version="$(node --version)"
node_major="${node_version#v}"; node_major="${node_major%%.*}"
[[ "$node_major" =~ ^[0-9]+$ && "$node_major" -ge 18 ]] ||
  fail "node $node_version is too old for the conformance suite: install Node.js 18 or later (Debian 12: apt-get install nodejs)"
command -v curl >/dev/null || fail "curl not installed"

work="$(mktemp -d "${TMPDIR:-/tmp}/ferry-conformance.XXXXXX")"
pids=()
status=1
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    # Bounded wait: a process that ignores SIGTERM for 5 s gets SIGKILL.
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ $status -eq 0 && "${CONFORMANCE_KEEP_LOGS:-0}" != 1 ]]; then
    rm -rf "$work"
  else
    echo "[conformance] logs kept in $work"
  fi
}
trap 'status=$?; cleanup' EXIT
# forget_pid PID: a process already waited for (reaped) is not signalled again at exit.
forget_pid() {
  local keep=() p
  for p in "${pids[@]}"; do [[ "$p" == "$1" ]] || keep+=("$p"); done
  pids=("${keep[@]}")
}
trap 'exit 130' INT TERM

# --- install (cache-friendly: npm ci once per lockfile) ------------------------------------
install_deps() {
  local stamp="$here/node_modules/.ferry-lock.sha256"
  local want
  # npm ci resolves optional native packages for the node that runs it: a node_modules
  # installed under another Node version is stale, so the version is part of the stamp.
  want="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1) node=$node_version"
  exec 9>"$here/.npm-install.lock"   # two ctest entries may install at the same time
  flock 9
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    log "npm dependencies already installed (lockfile and node $node_version unchanged)"
  else
    log "npm ci (pinned versions from package-lock.json, node $node_version)"
    if ! (cd "$here" && npm ci --no-audit --no-fund >"$work/npm-ci.log" 2>&1); then
      # npm prints the reason first, then usage text: show the first lines that say something.
      grep -v -E '^npm error *$' "$work/npm-ci.log" | head -n 12 >&2
      fail "npm ci failed in $here: $(grep -m1 -E 'npm error (code|[^ ])' "$work/npm-ci.log" | head -c 300)"
    fi
    echo "$want" >"$stamp"
  fi
  flock -u 9
}
install_deps

# --- process helpers ----------------------------------------------------------------------
# wait_line FILE REGEX PID [SECONDS]: wait until FILE has a line matching REGEX; fail if PID
# exits first or the time runs out.
wait_line() {
  local file="$1" re="$2" pid="$3" secs="${4:-15}"
  local deadline=$((SECONDS + secs))
  until grep -qE "$re" "$file" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { cat "$file" >&2; fail "process $pid exited before printing /$re/"; }
    ((SECONDS < deadline)) || { cat "$file" >&2; fail "timed out waiting for /$re/ in $file"; }
    sleep 0.05
  done
}

# wait_port PORT PID [SECONDS]: wait until 127.0.0.1:PORT accepts.
wait_port() {
  local port="$1" pid="$2" secs="${3:-15}"
  local deadline=$((SECONDS + secs))
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || fail "process $pid exited before 127.0.0.1:$port accepted"
    ((SECONDS < deadline)) || fail "timed out waiting for 127.0.0.1:$port"
    sleep 0.05
  done
}

free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# start_reference NAME [ARGS...]: starts a reference server; sets REF_PORT.
start_reference() {
  local name="$1"
  shift
  node "$here/start-reference-server.mjs" --long-poll-timeout-ms 3000 "$@" >"$work/$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  wait_line "$work/$name.log" '^reference-server ready url=' "$pid"
  REF_PORT="$(sed -n 's/^reference-server ready url=http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/$name.log" | head -1)"
  [[ -n "$REF_PORT" ]] || fail "could not parse reference server port from $work/$name.log"
  log "$name: reference server on 127.0.0.1:$REF_PORT (pid $pid)"
}

# start_proxy NAME UPSTREAM_PORT: starts the proxy under test; sets PROXY_PORT.
start_proxy() {
  local name="$1" up="$2" pid
  case "$proxy_kind" in
    ferry)
      local listener="{address: 127.0.0.1, port: 0}"
      if [[ $h2_tls -eq 1 ]]; then
        mkdir -p "$work/tls"
        "$certs_tool" "$work/tls" || fail "ferry-test-certs failed"
        listener="{address: 127.0.0.1, port: 0, tls: {cert_file: $work/tls/server.pem, key_file: $work/tls/server.key}}"
      fi
      cat >"$work/$name.yaml" <<EOF
instance_name: ref-1
listener: $listener
local_instance: {address: 127.0.0.1, port: $up}
admin: {address: 127.0.0.1, port: 0}
workers: 1
forwarding: {enabled: false}
EOF
      "$ferry_bin" --config "$work/$name.yaml" >"$work/$name.log" 2>&1 &
      pid=$!
      pids+=("$pid")
      wait_line "$work/$name.log" '^ferry ready listener=' "$pid"
      PROXY_PORT="$(sed -n 's/^ferry ready listener=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/$name.log" | head -1)"
      PROXY_ADMIN_PORT="$(sed -n 's/^ferry ready .*admin=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/$name.log" | head -1)"
      ;;
    nghttpx)
      PROXY_PORT="$(free_port)"
      # Stand-in: no Via / X-Forwarded-Proto / Server rewriting, so only transport differs.
      # Its backend keep-alive outlives the reference server's 5 s so the race is exercised.
      nghttpx --conf=/dev/null --frontend="127.0.0.1,$PROXY_PORT;no-tls" \
        --backend="127.0.0.1,$up" --workers=1 --no-via --no-server-rewrite \
        --no-add-x-forwarded-proto --backend-keep-alive-timeout=10s \
        --errorlog-file="$work/$name.log" >>"$work/$name.log" 2>&1 &
      pid=$!
      pids+=("$pid")
      wait_port "$PROXY_PORT" "$pid"
      ;;
    haproxy)
      PROXY_PORT="$(free_port)"
      cat >"$work/$name.cfg" <<EOF
global
  maxconn 1000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 10s
frontend fe
  bind 127.0.0.1:$PROXY_PORT
  default_backend be
backend be
  http-reuse always
  server ref 127.0.0.1:$up
EOF
      haproxy -db -f "$work/$name.cfg" >"$work/$name.log" 2>&1 &
      pid=$!
      pids+=("$pid")
      wait_port "$PROXY_PORT" "$pid"
      ;;
  esac
  [[ -n "$PROXY_PORT" ]] || fail "could not parse proxy port from $work/$name.log"
  log "$name: $proxy_kind on 127.0.0.1:$PROXY_PORT -> 127.0.0.1:$up (pid $pid)"
}

# vitest ARGS: runs vitest in this folder. Only call it in the background or in a pipeline
# (a subshell): it execs, so its pid is node's own and cleanup can stop it.
vitest() {
  cd "$here" && exec node node_modules/vitest/vitest.mjs run --config "${VITEST_CONFIG:-vitest.config.mjs}" "$@"
}

# --- servers --------------------------------------------------------------------------------
# Each run gets its own reference server so parallel runs never share stream names or
# idle connections: direct suite -> ref-direct; suite and clients through the proxy ->
# ref-proxied; keep-alive race -> ref-idle (no other traffic may touch its pooled connection).
rc=0
if [[ "$only" == all || "$only" == conformance ]]; then
  # The direct run is the yardstick for each test's outcome, so it must not race the reference
  # server's idle close (5 s): under CPU load the suite's client (undici, which keeps idle
  # connections for the advertised timeout minus 1 s) sent a request on a connection the server
  # was closing ("fetch failed: other side closed" on a PUT, direct side only: a false
  # difference, seen three times on 2026-12-03 at load 15). Through the proxy the client meets
  # ferry's 60 s keep-alive instead. Idle races have their own phase below (ref-idle-*).
  start_reference ref-direct --keep-alive-timeout-ms 120000; direct_port=$REF_PORT
fi
start_reference ref-proxied; proxied_up=$REF_PORT
start_proxy proxy "$proxied_up"; proxy_port=$PROXY_PORT
if [[ "$only" == all || "$only" == clients ]]; then
  # Two idle-race pairs: the reference server as shipped (advertises 5 s, closes after 6 s)
  # and one that closes after 3 s, sooner than a proxy's own upstream idle timeout is likely
  # to be, so the proxy really meets connections the server is closing.
  declare -A idle_up idle_proxy
  for variant in default short; do
    ka=()
    [[ $variant == short ]] && ka=(--keep-alive-timeout-ms 2000)
    start_reference "ref-idle-$variant" --trace-connections "$work/ref-idle-$variant.trace" "${ka[@]}"
    idle_up[$variant]=$REF_PORT
    start_proxy "proxy-idle-$variant" "$REF_PORT"
    idle_proxy[$variant]=$PROXY_PORT
  done
fi

# --- phase 1: conformance suite, direct and through the proxy (in parallel), plus the
# keep-alive race which mostly waits on idle timers --------------------------------------
phase1=()
# The suite's chunk-size pagination case spends 4.6 to 9.7 s under load in its own 102,400
# per-byte assertions (its requests take under 1 s), so its 5 s budget is decided by the
# machine's load on either side: a false difference. Both runs leave it out; the same requests
# are checked by "ferry: Chunking and Large Payloads" in conformance.test.mjs.
suite_skip='^(?!.*should handle chunk-size pagination correctly)'
if [[ "$only" == all || "$only" == conformance ]]; then
  log "conformance suite: direct (127.0.0.1:$direct_port) and via $proxy_kind (127.0.0.1:$proxy_port)"
  CONFORMANCE_BASE_URL="http://127.0.0.1:$direct_port" vitest conformance.test.mjs -t "$suite_skip" \
    --reporter=dot --reporter=json --outputFile.json="$work/direct.json" >"$work/suite-direct.log" 2>&1 &
  phase1+=($!); pids+=($!)
  proxied_url="http://127.0.0.1:$proxy_port"
  proxied_config=vitest.config.mjs
  if [[ $h2_tls -eq 1 ]]; then
    proxied_url="https://127.0.0.1:$proxy_port"
    proxied_config=vitest.h2.config.mjs
  fi
  CONFORMANCE_BASE_URL="$proxied_url" FERRY_H2_CA="$work/tls/ca.pem" VITEST_CONFIG="$proxied_config" \
    vitest conformance.test.mjs -t "$suite_skip" \
    --reporter=dot --reporter=json --outputFile.json="$work/proxied.json" >"$work/suite-proxied.log" 2>&1 &
  phase1+=($!); pids+=($!)
fi
declare -A keepalive_pid
if [[ "$only" == all || "$only" == clients ]]; then
  for variant in default short; do
    log "keep-alive race ($variant server keep-alive) via $proxy_kind" \
      "(127.0.0.1:${idle_proxy[$variant]} -> 127.0.0.1:${idle_up[$variant]})"
    PROXY_URL="http://127.0.0.1:${idle_proxy[$variant]}" \
      UPSTREAM_URL="http://127.0.0.1:${idle_up[$variant]}" \
      UPSTREAM_TRACE="$work/ref-idle-$variant.trace" \
      vitest keepalive.test.mjs --reporter=verbose >"$work/keepalive-$variant.log" 2>&1 &
    keepalive_pid[$variant]=$!; pids+=($!)
  done
fi
for p in "${phase1[@]}"; do wait "$p" || true; forget_pid "$p"; done   # judged by compare

if [[ "$only" == all || "$only" == conformance ]]; then
  for t in direct proxied; do
    [[ -s "$work/$t.json" ]] || { tail -n 40 "$work/suite-$t.log" >&2; fail "conformance run '$t' produced no JSON report"; }
  done
  if [[ $h2_tls -eq 1 ]]; then
    # The suite must really have spoken HTTP/2 over TLS: every request through ferry.
    stats="$(curl -sS "http://127.0.0.1:$PROXY_ADMIN_PORT/stats")" || fail "ferry /stats unreadable"
    h2_conns="$(sed -n 's/^ferry_downstream_http2_connections_total \([0-9]*\)$/\1/p' <<<"$stats")"
    tls_ok="$(sed -n 's/^ferry_downstream_tls_handshakes_total{outcome="ok"} \([0-9]*\)$/\1/p' <<<"$stats")"
    log "via ferry over TLS: ${tls_ok:-0} handshakes, ${h2_conns:-0} of them HTTP/2"
    [[ "${h2_conns:-0}" -ge 1 && "${h2_conns:-0}" -eq "${tls_ok:-0}" ]] ||
      { log "conformance: the suite did not reach ferry over HTTP/2 only"; rc=1; }
  fi
  if node "$here/compare-results.mjs" "$work/direct.json" "$work/proxied.json" \
      --label-a direct --label-b "via-$proxy_kind"; then
    log "conformance: no difference between direct and via $proxy_kind"
  else
    log "conformance: DIFFERENCES through $proxy_kind (suite logs: $work/suite-*.log)"
    rc=1
  fi
fi

# --- phase 2: real clients through the proxy ------------------------------------------------
if [[ "$only" == all || "$only" == clients ]]; then
  log "real clients via $proxy_kind (127.0.0.1:$proxy_port -> 127.0.0.1:$proxied_up)"
  if PROXY_URL="http://127.0.0.1:$proxy_port" UPSTREAM_URL="http://127.0.0.1:$proxied_up" \
      vitest clients.test.mjs --reporter=verbose 2>&1 | tee "$work/clients.log"; then
    log "real clients: passed"
  else
    log "real clients: FAILED"
    rc=1
  fi
  for variant in default short; do
    keepalive_ok=1
    wait "${keepalive_pid[$variant]}" || keepalive_ok=0
    forget_pid "${keepalive_pid[$variant]}"
    cat "$work/keepalive-$variant.log"
    if [[ $keepalive_ok -eq 1 ]]; then
      log "keep-alive race ($variant server keep-alive): passed"
    else
      log "keep-alive race ($variant server keep-alive): FAILED"
      rc=1
    fi
  done
fi

if [[ $rc -ne 0 ]]; then
  echo "[conformance] RESULT: FAIL ($proxy_kind)"
else
  echo "[conformance] RESULT: PASS ($proxy_kind)"
fi
exit $rc
