#!/usr/bin/env bash
# End-to-end tests of lamina-serve: installs the pinned openai client with
# `npm ci` into a folder of the build tree (once, or when the lock file
# changes), copies the test scripts beside it and runs them with node's test
# runner. Each test file starts its own servers on free ports.
# Usage: run_e2e.sh LAMINA_SERVE_EXE WORK_DIR SOURCE_DIR
set -euo pipefail
serve_exe=$1
work=$2
src=$3

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node and npm are needed for the end-to-end tests (Debian: apt-get install nodejs npm)"
  exit 77
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "SKIP: node $(node --version) is too old; the tests need node 20 or later"
  exit 77
fi

mkdir -p "$work"
stamp="$work/node_modules/.lamina-package-lock.json"
if ! cmp -s "$src/package-lock.json" "$stamp"; then
  cp "$src/package.json" "$src/package-lock.json" "$work/"
  echo "installing the openai client into $work (npm ci)"
  if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "FAIL: npm ci could not install the pinned openai client (is the npm registry reachable?)"
    exit 1
  fi
  cp "$src/package-lock.json" "$stamp"
fi
# The scripts import 'openai' from the node_modules beside them.
rm -f "$work"/*.mjs
cp "$src"/*.mjs "$work/"

export LAMINA_SERVE_EXE="$serve_exe"
cd "$work"
exec node --test --test-reporter=spec ./*.test.mjs
