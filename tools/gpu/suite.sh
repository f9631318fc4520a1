#!/usr/bin/env bash
# Runs on a GPU machine over a bundle made by tools/gpu/bundle.sh (with the
# test programs, lamina-bench, lamina-synth-model and the kernel benchmarks):
# the GPU test suite, the kernel benchmarks, then lamina-bench on synthetic
# models of real shapes, optionally a per-kernel profile of decode steps.
#   tools/gpu/suite.sh BUNDLE OUT [STEP...]
# STEPs: tests, kernels, bench, profile, serve (default: tests kernels bench).
# The test data must be in BUNDLE/testdata (the tests were configured with
# -Dtestdata_dir=/opt/lamina-td, linked here to it). Models go to /tmp/models.
set -uo pipefail
bundle=$(cd "$1" && pwd)
out=$2
shift 2
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests kernels bench)
mkdir -p "$out" /tmp/models
export LD_LIBRARY_PATH="$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -d "$bundle/testdata" ] && ln -sfn "$bundle/testdata" /opt/lamina-td
models=/tmp/models
status=0

has_step() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
log() { echo "== $* ==" | tee -a "$out/summary.txt"; }

# synth PRESET TYPE: writes $models/PRESET.TYPE.gguf once.
synth() {
  local f="$models/$1.$2.gguf"
  [ -f "$f" ] || "$bundle/lamina-synth-model" "$1" "$f" --type "$2" > /dev/null 2>> "$out/synth.log" || return 1
  echo "$f"
}

nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv | tee -a "$out/summary.txt"

if has_step tests; then
  for t in cudaexec_matmul cudaexec_matmul_mma cudaexec_matmul_shapes cudaexec_gpu_forward; do
    [ -x "$bundle/$t" ] || continue
    log "test $t"
    start=$(date +%s)
    "$bundle/$t" > "$out/$t.log" 2>&1
    rc=$?
    tail -n 3 "$out/$t.log" | tee -a "$out/summary.txt"
    echo "$t: exit $rc in $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
    [ $rc -eq 0 ] || status=1
  done
fi

if has_step kernels; then
  log "matvec_bench"
  "$bundle/matvec_bench" > "$out/matvec_bench.txt" 2>&1 || status=1
  tail -n 40 "$out/matvec_bench.txt" >> "$out/summary.txt"
  if [ -x "$bundle/matmul_mma_bench" ]; then
    log "matmul_mma_bench"
    "$bundle/matmul_mma_bench" > "$out/matmul_mma_bench.txt" 2>&1 || status=1
    tail -n 30 "$out/matmul_mma_bench.txt" >> "$out/summary.txt"
  fi
fi

if has_step bench; then
  for spec in qwen2-0.5b:Q4_K_M qwen2-1.5b:Q4_K_M llama3-8b:Q4_K_M llama3-8b:Q4_0; do
    f=$(synth "${spec%%:*}" "${spec##*:}") || { echo "synth $spec failed"; status=1; continue; }
    log "lamina-bench $spec ($(du -h "$f" | cut -f1))"
    "$bundle/lamina-bench" -m "$f" --device cuda -p 512 -n 128 -r 5 -o md 2>> "$out/bench.log" |
      tee -a "$out/summary.txt" || status=1
  done
fi

if has_step profile; then
  # One decode step per kernel, launched eagerly so each kernel shows.
  for spec in llama3-8b:Q4_K_M qwen2-0.5b:Q4_K_M; do
    f=$(synth "${spec%%:*}" "${spec##*:}") || continue
    name=$(echo "$spec" | tr ':' '_')
    log "ncu $spec"
    ncu --clock-control none --metrics gpu__time_duration.sum --csv \
      "$bundle/lamina-bench" -m "$f" --device cuda --no-parity-check --no-cuda-graphs -p 0 -n 3 -r 1 \
      > "$out/ncu_$name.csv" 2> "$out/ncu_$name.err" || status=1
    tail -n 2 "$out/ncu_$name.err" >> "$out/summary.txt"
  done
fi

if has_step serve; then
  # Aggregate throughput of concurrent streams through lamina-serve.
  for spec in qwen2-0.5b:Q4_K_M llama3-8b:Q4_K_M; do
    f=$(synth "${spec%%:*}" "${spec##*:}") || continue
    log "serve $spec"
    "$bundle/lamina-serve" -m "$f" --device cuda --parallel 64 -c 512 --port 8093 --max-queue 256 \
      2> "$out/serve_$(echo "$spec" | tr ':' '_').log" &
    pid=$!
    for _ in $(seq 120); do
      python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8093/health')" 2> /dev/null && break
      sleep 1
    done
    python3 "$(dirname "$0")/../serve-load.py" --url http://127.0.0.1:8093 --concurrency 1,8,32,64 \
      --seconds 8 --max-tokens 64 | tee -a "$out/summary.txt" || status=1
    kill -INT $pid; wait $pid
  done
fi

exit $status
