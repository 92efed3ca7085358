#!/bin/sh
# Hand-over under continuous appends with owner routing on, as a bench arm (project issue 15):
# runs the integration test OwnerRoutingHandoverTest with FERRY_HANDOVER_APPENDS appends per
# producer (default here 2000; three producers, one per ferry of a 3-instance cell) and prints
# its counts line. The test fails (and this exits non-zero) unless every acknowledged append is
# in the stream exactly once and each producer's appends are in order. See bench/README.md.
#
#   bench/handover/run.sh [BUILD_DIR] [APPENDS]
set -eu
build=${1:-build}
appends=${2:-2000}
FERRY_HANDOVER_APPENDS=$appends "$build/tests/integration/forwarding/forwarding_integration_test" \
  --gtest_filter='OwnerRoutingHandoverTest.*' | grep -E '^handover:|^\[  (PASSED|FAILED)'
