#!/usr/bin/env bash
# Fails when a tracked C/C++ file is not formatted as .clang-format says (clang-format 14, the
# one Debian 12 ships; scripts/install-deps.sh installs it). Run by ctest (`format`) and so by
# the test command. Fix with: git ls-files '*.cc' '*.h' '*.c' | xargs clang-format -i
# (or only your lines: git diff -U0 | clang-format-diff -p1 -i).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null 2>&1; then
  echo "check-format: clang-format is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.c' ':!:integration/conformance/node_modules/*')
if [ ${#files[@]} -eq 0 ]; then
  echo "check-format: no C/C++ files found (not a git checkout?)" >&2
  exit 1
fi
if ! clang-format --dry-run --Werror "${files[@]}" 2> /tmp/ferry-format.$$; then
  grep -o '^[^:]*:[0-9]*:[0-9]*: error' /tmp/ferry-format.$$ | cut -d: -f1 | sort -u |
    sed 's/^/check-format: not formatted: /' >&2
  head -40 /tmp/ferry-format.$$ >&2
  rm -f /tmp/ferry-format.$$
  exit 1
fi
rm -f /tmp/ferry-format.$$
echo "check-format: ${#files[@]} files formatted as .clang-format says"
