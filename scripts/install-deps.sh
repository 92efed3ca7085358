#!/usr/bin/env bash
# Installs ferry's build, test and bench dependencies from Debian's packages.
# Idempotent: apt-get runs only when something is missing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  clang-format  # scripts/check-format.sh (ctest format_check): the code's .clang-format
  libevent-dev node-llhttp libnghttp2-dev libssl-dev rapidjson-dev libyaml-cpp-dev
  libmimalloc-dev  # the allocator (root CMakeLists.txt, FERRY_MIMALLOC)
  liburing-dev  # io_uring: a loop pass's writes in one system call (proxy/event/write_batch.h)
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  curl
  haproxy nginx-light nghttp2-proxy wrk python3 python3-matplotlib
  python3-yaml  # docker/run_without_engine.py (the docker_compose_without_engine test)
  # HTTP/2 clients for the h2/h2c tests (nghttp, h2load; python3-h2 sends raw attack frames)
  # and h2o, a peer in bench/passthrough's HTTP/2 scenarios.
  nghttp2-client python3-h2 h2o
  # scripts/fuzz.sh and scripts/sanitize.sh: clang, libFuzzer and the sanitizer runtimes
  # (libclang_rt.fuzzer-x86_64.a), llvm-symbolizer for readable sanitizer stacks.
  clang libclang-rt-14-dev llvm
)
missing=()
# Node.js and npm (the conformance suite) may come from elsewhere on the machine;
# install Debian's only when there is no node at all.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The benches start their own HAProxy, nginx and nghttpx on loopback ports: installing them
# must not leave system services running (nginx would take port 80). Debian's policy-rc.d
# hook (exit 101) stops maintainer scripts from starting daemons; the units are disabled too.
declare -A daemon_of=([haproxy]=haproxy [nginx-light]=nginx [nghttp2-proxy]=nghttpx [h2o]=h2o)
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q
  policy=/usr/sbin/policy-rc.d
  own_policy=false
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
    own_policy=true
  fi
  status=0
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" || status=$?
  if $own_policy; then $SUDO rm -f "$policy"; fi
  [ $status -eq 0 ] || exit $status
  # Only the units of packages this run installed: an operator's own nginx is left as it was.
  for p in "${missing[@]}"; do
    d=${daemon_of[$p]:-}
    if [ -n "$d" ] && command -v systemctl >/dev/null 2>&1; then
      $SUDO systemctl disable --now "$d" >/dev/null 2>&1 || true
    fi
  done
fi

# The conformance suite's toolchain needs Node.js 18 or later (Debian 12 has 18.19+).
node_major=$(node --version 2>/dev/null | sed -n 's/^v\([0-9]*\)\..*/\1/p')
if [ -z "$node_major" ] || [ "$node_major" -lt 18 ]; then
  echo "install-deps: Node.js 18 or later is needed for the conformance suite (found: $(node --version 2>/dev/null || echo none)); install Debian's nodejs package or a newer Node" >&2
  exit 1
fi
