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

. "$src/../npm_packages.sh"
install_npm_packages "$work" "$src" "the openai client"
# The scripts import 'openai' from the node_modules beside them.
rm -f "$work"/*.mjs
cp "$src"/*.mjs "$work/"

export LAMINA_SERVE_EXE="$serve_exe"
# The C++ tests' copies of released chat templates are read from the source tree.
export LAMINA_TESTS_SOURCE_DIR="$(cd "$src/.." && pwd)"
cd "$work"
exec node --test --test-reporter=spec ./*.test.mjs
