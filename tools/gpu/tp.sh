#!/bin/bash
# One GPU against tensor parallelism over every visible GPU, Lamina and llama.cpp: tp.sh PRESET:TYPE...
# B: a bundle (tools/gpu/bundle.sh) holding lamina-bench and lamina-synth-model;
# LLAMA_BIN: llama.cpp's bin folder (../shared/anchors/build-llama-cpp.sh cuda); TESTS as
# compare-llama.py's; N GPUs: TP=2 by default; SKIP0/SKIP1/SKIPR/SKIPT/SKIPL leave a comparison out.
H=$(cd "$(dirname "$0")" && pwd); B=${B:-$H}; O=${OUT:-/tmp/out}; N=${TP:-2}
LB=${LLAMA_BIN:?llama.cpp bin folder}
NCCL=$(find /usr/local/cuda/ /usr/lib /usr/local/lib /opt -name libnccl.so.2 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$B:$LB:$(dirname "$NCCL"); export NCCL_NVLS_ENABLE=0
files=(); for spec in "$@"; do p=${spec%%:*}; t=${spec##*:}; f=/tmp/models/$p.$t.gguf
  [ -f $f ] || $B/lamina-synth-model $p $f --type $t > /dev/null || echo "synth $spec failed"; files+=($f); done
cmp() { python3 $H/compare-llama.py --lamina $B/lamina-bench --llama $LB --tests ${TESTS:-pp} -r ${R:-2} "$@" "${files[@]}" 2>&1 | grep "^|\|rror"; }
echo "## one GPU (Lamina plain, llama.cpp -sm none)"; [ -n "$SKIP0" ] || cmp --llama-args "-sm none" --raw $O/raw1.txt
echo "## Lamina --tensor-parallel 1 (the sliced sums on one GPU) against llama.cpp -sm none"; [ -n "$SKIP1" ] || cmp --lamina-args "--tensor-parallel 1" --llama-args "-sm none" --raw $O/raw2.txt
echo "## Lamina --tensor-parallel $N against llama.cpp -sm row"; [ -n "$SKIPR" ] || cmp --lamina-args "--tensor-parallel $N" --llama-args "-sm row" --raw $O/raw3.txt
echo "## Lamina --tensor-parallel $N against llama.cpp -sm tensor"; [ -n "$SKIPT" ] || cmp --lamina-args "--tensor-parallel $N" --llama-args "-sm tensor" --raw $O/raw4.txt
echo "## Lamina --split-mode layer against llama.cpp -sm layer"; [ -n "$SKIPL" ] || cmp --lamina-args "--split-mode layer" --llama-args "-sm layer" --raw $O/raw5.txt
