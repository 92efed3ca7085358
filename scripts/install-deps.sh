#!/usr/bin/env bash
# Installs ferry's build, test and bench dependencies from Debian's packages.
# Idempotent: apt-get runs only when something is missing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libevent-dev node-llhttp libnghttp2-dev libssl-dev rapidjson-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  curl
  haproxy nginx-light nghttp2-proxy wrk python3 python3-matplotlib
  python3-yaml  # docker/run_without_engine.py (the docker_compose_without_engine test)
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
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
