#!/bin/sh
# Copies every GGUF file of the test data (up to a size limit) into a libFuzzer
# corpus folder, plus a few tiny hand-made inputs.
# Usage: seed_corpus.sh TESTDATA_DIR CORPUS_DIR [MAX_BYTES]
set -eu
testdata=$1
corpus=$2
max_bytes=${3:-4194304}

if [ ! -d "$testdata" ]; then
  echo "seed_corpus.sh: test data folder '$testdata' not found" >&2
  exit 1
fi
mkdir -p "$corpus"

copied=0
skipped=0
for f in $(find "$testdata" -name '*.gguf' -type f | sort); do
  size=$(wc -c < "$f")
  if [ "$size" -gt "$max_bytes" ]; then
    skipped=$((skipped + 1))
    continue
  fi
  # Folder and file name, so vocab/ and quant/ files never collide.
  name=$(echo "${f#"$testdata"/}" | tr '/' '_')
  cp "$f" "$corpus/$name"
  copied=$((copied + 1))
done

# The smallest valid files: v3 and v2 headers with nothing after them.
printf 'GGUF\003\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' \
  > "$corpus/empty-v3.gguf"
printf 'GGUF\002\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' \
  > "$corpus/empty-v2.gguf"

echo "seed_corpus.sh: $copied test data files copied into $corpus, $skipped over $max_bytes bytes skipped"
