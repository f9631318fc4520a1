// Runs the pp / tg measurements of lamina-bench.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "run_flags.h"

namespace lamina::bench {

struct BenchOptions {
  std::string model_path;
  std::vector<int> n_prompt{512};
  std::vector<int> n_gen{128};
  std::vector<int> threads{0};  // 0: all hardware threads
  std::vector<int> depth{0};    // tokens of context before each pp/tg test (llama-bench's -d)
  // Many-sequence decode: for each N, N sequences of seq_prompt tokens each
  // are prefilled together, then decode seq_gen tokens each, all N per step
  // (llama-batched-bench's -npl N -npp seq_prompt -ntg seq_gen).
  std::vector<int> sequences;
  int seq_prompt = 16;
  int seq_gen = 64;
  int repetitions = 5;
  apps::RunFlags run;  // all but n_ctx and n_threads, which come from the lists above
};

struct ModelFacts {
  std::string path, arch, type_mix;
  uint64_t file_bytes = 0, params = 0;
};

struct BenchResult {
  std::string test;  // "pp512", "tg128", "pp512@d4096", "tg64@s32"
  int threads = 0;
  int n_tokens = 0;
  std::vector<double> seconds;  // per repetition
  double mean_tps() const;
  double stddev_tps() const;
};

struct BenchRun {
  ModelFacts model;
  std::vector<BenchResult> results;
  double load_ms = 0.0;
  double load_cpu_ms = 0.0;  // CPU time of all threads during the load
  uint64_t peak_rss_bytes = 0;
  uint64_t kv_cache_bytes = 0;
  std::string backend;        // "CPU (AVX3_DL)", "CUDA (NVIDIA H200)"
  std::string device_memory;  // GPU memory report, empty on the CPU
  double first_token_ms = 0;  // time to first token: the longest prompt + one decode step
  double first_token_cpu_ms = 0;
};

BenchRun run_benchmarks(const BenchOptions& options, std::ostream& progress);

}  // namespace lamina::bench
