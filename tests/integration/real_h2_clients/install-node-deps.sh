#!/usr/bin/env bash
# Installs this folder's pinned npm packages (undici) once per lockfile and Node version, as
# integration/conformance/run.sh does: `npm ci` under a lock (several ctest entries may ask at
# once), a stamp in node_modules saying what was installed. Exit status 0 when node_modules is
# ready.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
node_version="$(node --version)"
want="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1) node=$node_version"
stamp="$here/node_modules/.ferry-lock.sha256"
exec 9>"$here/.npm-install.lock"
flock 9
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
log="$(mktemp "${TMPDIR:-/tmp}/ferry-h2-npm.XXXXXX")"
if ! (cd "$here" && npm ci --no-audit --no-fund >"$log" 2>&1); then
  grep -v -E '^npm error *$' "$log" | head -n 12 >&2
  rm -f "$log"
  echo "npm ci failed in $here" >&2
  exit 1
fi
rm -f "$log"
echo "$want" >"$stamp"
