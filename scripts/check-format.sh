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
if command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.c' ':!:integration/conformance/node_modules/*')
else
  # Not a git checkout (a tarball), or no git (a fresh Debian has none): every C/C++ source but
  # build directories (any with a CMakeCache.txt) and npm's.
  mapfile -t files < <(find . -type d \( -name .git -o -name node_modules \
    -o -exec test -e '{}/CMakeCache.txt' ';' \) -prune -o -type f \
    \( -name '*.cc' -o -name '*.h' -o -name '*.c' \) -print | sed 's|^\./||' | sort)
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "check-format: no C/C++ files found" >&2
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
