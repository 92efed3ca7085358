#!/usr/bin/env bash
# Builds ferry's images (docker/Dockerfile targets `ferry` and `bench`) and runs the compose cell
# bench (docker/docker-compose.yml) end to end on a real container engine; exits 0 only when the
# bench met its goal (bench/cell/run.py: unpinned-with-ferry / pinned >= 0.97 with 0 errors and
# 0 client 409s, cell.json "goal_met"). Always cleans up: `compose down -v`.
#
#   docker/test-compose.sh                  # quick mode (2 rounds x 5 s per arm), 141 ms edge
#   BENCH_MODE=--rounds=3 docker/test-compose.sh    # full mode
#   SKIP_BUILD=1 docker/test-compose.sh     # reuse ferry:dev and ferry-bench:dev
#
# Environment: EDGE_RTT_MS (141), BENCH_MODE (--quick), RESULTS (docker/results: cell.md,
# cell.json and the service logs land there), NICE (19: builds and the engine's containers run
# at this niceness when the script starts them), COMPOSE ("docker compose" if it works, else
# docker-compose), COMPOSE_PROJECT_NAME (ferrycell), RUN_TIMEOUT (seconds for `up`, 900),
# EXPECT_FLAVOR (release-pgo: what the running ferries' --version and ferry_build_info{flavor}
# must say), JOBS (the image build's parallel compile jobs, --build-arg JOBS; default every core).
# Engine: Docker, or podman behind its Docker-compatible socket (DOCKER_HOST; with no Docker
# socket and /run/podman/podman.sock present, that one is used). With podman, images are built
# by `podman build --format docker` (the OCI format drops HEALTHCHECK) and, where no systemd
# runs podman's healthcheck timers, this script runs the compose file's healthchecks itself
# (`podman healthcheck run`), or `depends_on: service_healthy` would wait forever.
set -euo pipefail
cd "$(dirname "$0")/.."

export EDGE_RTT_MS=${EDGE_RTT_MS:-141} BENCH_MODE=${BENCH_MODE:---quick}
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-ferrycell}
RESULTS=${RESULTS:-docker/results}
NICE=${NICE:-19}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
EXPECT_FLAVOR=${EXPECT_FLAVOR:-release-pgo}
FILE=docker/docker-compose.yml
say() { echo "[test-compose] $*" >&2; }

if [ -z "${DOCKER_HOST:-}" ] && [ ! -S /var/run/docker.sock ] && [ -S /run/podman/podman.sock ]; then
  export DOCKER_HOST=unix:///run/podman/podman.sock
fi
podman=false
case "${DOCKER_HOST:-}" in *podman*) command -v podman >/dev/null && podman=true ;; esac
if $podman; then CLI=podman; else CLI=docker; fi
if [ -z "${COMPOSE:-}" ]; then
  if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"; else COMPOSE=docker-compose; fi
fi
compose() { $COMPOSE -f "$FILE" "$@"; }
compose version >/dev/null || { say "no compose client ($COMPOSE)"; exit 2; }
$CLI info >/dev/null 2>&1 || { say "no container engine answers ($CLI, DOCKER_HOST=${DOCKER_HOST:-})"; exit 2; }
say "engine: $CLI (DOCKER_HOST=${DOCKER_HOST:-default}), compose: $COMPOSE, project $COMPOSE_PROJECT_NAME"

# ---------------------------------------------------------------- images
if [ -z "${SKIP_BUILD:-}" ]; then
  for target in ferry bench; do
    tag=ferry:dev; [ $target = bench ] && tag=ferry-bench:dev
    say "building $tag (--target $target)"
    t0=$SECONDS
    if $podman; then
      nice -n "$NICE" podman build --format docker --ignorefile .dockerignore \
        ${JOBS:+--build-arg JOBS="$JOBS"} -f docker/Dockerfile --target $target -t $tag .
    else
      nice -n "$NICE" docker build ${JOBS:+--build-arg JOBS="$JOBS"} -f docker/Dockerfile --target $target -t $tag .
    fi
    say "built $tag in $((SECONDS - t0)) s"
  done
fi
$CLI images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E '(^|/)ferry(-bench)?:dev ' \
  | sed 's/^/[test-compose] image /' >&2

# ---------------------------------------------------------------- run
ticker=""
down_log=$(mktemp /tmp/ferry-compose-down.XXXXXX)
cleanup() {
  [ -n "$ticker" ] && kill "$ticker" 2>/dev/null || true
  say "compose down -v"
  # A second pass removes what the first could not: compose v1 removes containers in parallel,
  # and podman refuses to remove an emulator while the ferry in its network namespace exists.
  local t0=$SECONDS ok=false
  for _ in 1 2 3; do
    if compose down -v --remove-orphans >>"$down_log" 2>&1; then ok=true; break; fi
  done
  if $ok; then
    say "compose down took $((SECONDS - t0)) s"; rm -f "$down_log"
  else
    say "compose down failed (log: $down_log):"; tail -5 "$down_log" >&2
  fi
}
trap cleanup EXIT
compose down -v --remove-orphans >/dev/null 2>&1 || true  # a previous run's leftovers

# podman runs HEALTHCHECKs from systemd timers; without systemd nobody runs them. Stand in for
# the timer at the compose file's interval (2 s) while `up` runs.
if $podman && [ ! -d /run/systemd/system ]; then
  interval=$(python3 -c 'import sys,yaml; d=yaml.safe_load(open(sys.argv[1]));
print(d["x-ferry"]["healthcheck"]["interval"].rstrip("s"))' "$FILE" 2>/dev/null || echo 2)
  say "no systemd: running the healthchecks every ${interval} s (podman healthcheck run)"
  (
    while true; do
      for c in $(podman ps -q --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" \
                   2>/dev/null); do  # those without a healthcheck just fail
        podman healthcheck run "$c" >/dev/null 2>&1 || true
      done
      sleep "$interval"  # the healthcheck interval itself, not a synchronisation
    done
  ) &
  ticker=$!
fi

say "compose up (EDGE_RTT_MS=$EDGE_RTT_MS BENCH_MODE=$BENCH_MODE)"
t0=$SECONDS
up_log=$(mktemp /tmp/ferry-compose-up.XXXXXX)
set +e
timeout "$RUN_TIMEOUT" $COMPOSE -f "$FILE" up --no-build --exit-code-from bench bench 2>&1 \
  | tee "$up_log"
rc=${PIPESTATUS[0]}
set -e
elapsed=$((SECONDS - t0))
say "compose up exited $rc after $elapsed s"

# Results live in the bench's volume (docker-compose.yml says why); copy them out.
rm -rf "$RESULTS" && mkdir -p "$RESULTS/logs"
bench_id=$(compose ps -a -q bench 2>/dev/null || compose ps -q bench)
# docker-compose 1.29's log printer, which `up` runs to follow the attached services, can die
# on podman with "AttributeError: 'NoneType' object has no attribute 'log_stream'" (it looked
# up a container from an engine event and got none) while the bench runs on: `up` then exits 1
# though the bench finished. The bench container's own exit code is what --exit-code-from
# would have returned; use it then, and say so.
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ -n "$bench_id" ] \
    && grep -q "has no attribute 'log_stream'" "$up_log"; then
  $CLI wait "$bench_id" >/dev/null 2>&1 || true
  bench_rc=$($CLI inspect -f '{{.State.ExitCode}}' "$bench_id" 2>/dev/null || echo "")
  if [ -n "$bench_rc" ]; then
    say "compose's log printer crashed (docker-compose 1.29 on podman); the bench container exited $bench_rc: using that"
    rc=$bench_rc
  fi
fi
rm -f "$up_log"
if [ -n "$bench_id" ]; then
  $CLI cp "$bench_id:/out/." "$RESULTS/" || say "could not copy /out from the bench container"
fi
for s in $(compose ps --services 2>/dev/null); do
  compose logs --no-color "$s" >"$RESULTS/logs/$s.log" 2>&1 || true
done

# ---------------------------------------------------------------- verdict
verdict=0
python3 - "$RESULTS/cell.json" "$elapsed" <<'EOF' || verdict=$?
import json, sys
try:
    cell = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"[test-compose] FAIL: no bench results ({e})")
s, ratio = cell["summary"], cell["ratio_ferry_over_pinned"]
f = s.get("ferry", {})
print(f"[test-compose] launcher {cell['meta']['launcher']}, {cell['meta']['mode']} mode, "
      f"edge RTT {cell['meta']['edge_rtt_ms']} ms; `up` took {sys.argv[2]} s", file=sys.stderr)
for arm, x in s.items():
    print(f"[test-compose]   {arm:8s} {x['appends_per_s_median']:8.1f} appends/s  errors "
          f"{x['errors']}  client 409s {x['client_409']}  forwards "
          f"{sum(v or 0 for v in x['ferry_forward_attempts'].values()):.0f}", file=sys.stderr)
problems = []
if cell["meta"]["launcher"] != "compose":
    problems.append("not the compose launcher")
if ratio is None or ratio < 0.97:
    problems.append(f"ferry/pinned {ratio} < 0.97")
if f.get("errors", 1) or f.get("client_409", 1):
    problems.append(f"with ferry: {f.get('errors')} errors, {f.get('client_409')} client 409s")
if not cell.get("goal_met"):
    problems.append("run.py says goal NOT MET")
print(f"[test-compose] ferry/pinned = {ratio:.3f} (goal >= 0.97)" if ratio is not None
      else "[test-compose] no ratio", file=sys.stderr)
if problems:
    sys.exit("[test-compose] FAIL: " + "; ".join(problems))
print("[test-compose] goal MET", file=sys.stderr)
EOF

# The ferries must run the release build (the Dockerfile's build stage runs
# scripts/build-release.sh): their `ferry --version` and admin ferry_build_info say the flavor.
# Read in ferry-1's container (still running until cleanup's `down`), over bash's /dev/tcp as
# its health check does: the image has no curl.
flavor_ok=true
ferry_id=$(compose ps -q ferry-1 2>/dev/null || true)
if [ -n "$ferry_id" ]; then
  version=$($CLI exec "$ferry_id" ferry --version 2>&1 || true)
  build_info=$($CLI exec "$ferry_id" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9901 &&
    printf "GET /stats HTTP/1.1\r\nHost: ferry\r\nConnection: close\r\n\r\n" >&3 &&
    timeout 3 cat <&3' 2>&1 | grep '^ferry_build_info' || true)
  say "ferry-1: $version"
  say "ferry-1: $build_info"
  case "$version|$build_info" in
    *"build: $EXPECT_FLAVOR)"*"|"*"flavor=\"$EXPECT_FLAVOR\""*) ;;
    *) say "FAIL: ferry-1 is not the $EXPECT_FLAVOR build"; flavor_ok=false ;;
  esac
else
  say "FAIL: no ferry-1 container to ask for its build"; flavor_ok=false
fi

if [ $rc -ne 0 ]; then
  say "FAIL: compose up exited $rc (service logs in $RESULTS/logs/)"
  exit 1
fi
[ $verdict -eq 0 ] && $flavor_ok || exit 1
say "PASS (results in $RESULTS/)"
