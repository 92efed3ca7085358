#!/usr/bin/env bash
# Builds ferry and its tests under a sanitizer, each in its own build directory, and runs them
# (docs/testing.md "Sanitizers"). Clean means: every test passes AND no process the tests started
# (ferry, the emulator, the test binaries) wrote a sanitizer report.
#
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer (any UB is fatal),
#                              the whole suite, in build-asan/
#   scripts/sanitize.sh tsan   ThreadSanitizer, the multi-worker and reload tests, in build-tsan/
#
# Extra arguments go to ctest (e.g. -R connection_test). JOBS (default 2) bounds the build and
# ctest. Reports land in <build dir>/sanitizer-reports/<tool>.<pid>; the script prints them and
# fails when there is any. Under ASan, memory-bound tests (RSS assertions) skip with a reason
# (tests/support/sanitizers.h).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
shift || true
JOBS=${JOBS:-2}
CC=${CC:-clang}
CXX=${CXX:-clang++}
export CC CXX

case "$mode" in
  asan)
    build_dir=${BUILD_DIR:-build-asan}
    sanitize=address
    targets=(all)
    # Every test; the sanitizer makes each slower, hence the longer timeout.
    ctest_args=(--timeout 900)
    ;;
  tsan)
    build_dir=${BUILD_DIR:-build-tsan}
    sanitize=thread
    # Where threads meet: worker threads and their dispatchers' post(), peer-table snapshots
    # swapped under load, SIGHUP reloads of config and TLS files.
    # listener.tls rotation: SIGHUP swaps the server TLS context under a stream of handshakes.
    targets=(ferry streams-emulator dispatcher_test peer_table_provider_test
             peer_table_loader_test proxy_integration_test forwarding_integration_test
             listener_tls_integration_test)
    ctest_args=(--timeout 900 -R '^(DispatcherTest|PeerTableProviderTest|PeerTableLoaderTest)\.|Worker|Reload|Sighup|Rotation')
    ;;
  *)
    echo "usage: $0 asan|tsan [ctest args...]" >&2
    exit 2
    ;;
esac

launcher=()
command -v ccache >/dev/null 2>&1 &&
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFERRY_SANITIZE="$sanitize" "${launcher[@]}"
cmake --build "$build_dir" -j"$JOBS" --target "${targets[@]}"

reports="$PWD/$build_dir/sanitizer-reports"
rm -rf "$reports"
mkdir -p "$reports"
# log_path: reports of child processes (ferry under an integration test) are kept even when
# the test only kills them; exitcode: a report still fails the process that wrote it.
suppressions="$PWD/tests/support/sanitizer-suppressions"
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$suppressions/lsan.supp"
export TSAN_OPTIONS="log_path=$reports/tsan:halt_on_error=0:second_deadlock_stack=1:suppressions=$suppressions/tsan.supp"

# The flow tests move 1 GiB / 256 MiB by default; what they check (a paused side) shows with far
# less, and under a sanitizer every byte copied is checked.
export FERRY_ITEST_FLOW_MIB=${FERRY_ITEST_FLOW_MIB:-64}

status=0
ctest --test-dir "$build_dir" --output-on-failure -j"$JOBS" "${ctest_args[@]}" "$@" || status=$?

if compgen -G "$reports/*" >/dev/null; then
  echo "sanitize.sh: sanitizer reports in $reports:" >&2
  for f in "$reports"/*; do
    echo "==== $f" >&2
    head -n 60 "$f" >&2
  done
  status=1
fi
[ "$status" -eq 0 ] && echo "sanitize.sh $mode: clean"
exit "$status"
