// Kernel throughput on this machine, next to its memory read bandwidth:
//   MemoryRead      - all threads of the pool summing a 1 GiB buffer;
//   Matvec/<format> - one activation row against a 14336 x 4096 weight
//                     matrix (the decode step), in GB/s of weight bytes and
//                     as a percentage of the MemoryRead bandwidth measured
//                     first in the same run;
//   Matmul/<format>/<rows> - 8, 64 or 512 activation rows (prompt
//                     processing), in GFLOP/s (2 flops per multiply-add).
// Each call includes the quantization of its f32 activations. Matvec cycles
// through copies of the weights totalling >= 512 MiB, so that they come
// from memory and not from the last-level cache, even for the small formats.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lamina/quant/blocks.h"
#include "lamina/quant/format.h"
#include "lamina/quant/half.h"
#include "lamina/quant/kernels.h"
#include "lamina/quant/thread_pool.h"

namespace lamina::quant {
namespace {

constexpr size_t kOut = 14336;
constexpr size_t kIn = 4096;
constexpr size_t kReadBytes = size_t{1} << 30;
constexpr size_t kStreamBytes = size_t{512} << 20;

ThreadPool& pool() {
  static ThreadPool p(std::max(1u, std::thread::hardware_concurrency()));
  return p;
}

// Read bandwidth measured by MemoryRead, for the Matvec percentages.
double g_read_bytes_per_second = 0.0;

void MemoryRead(benchmark::State& state) {
  static std::vector<uint64_t> buffer(kReadBytes / sizeof(uint64_t), 1);
  const size_t n = buffer.size();
  std::vector<uint64_t> sums(pool().num_threads());
  for (auto _ : state) {
    pool().run_on_all([&](size_t t) {
      const auto [begin, end] = pool().thread_range(n, 1024, t);
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (size_t i = begin; i < end; i += 4) {
        s0 += buffer[i];
        s1 += buffer[i + 1];
        s2 += buffer[i + 2];
        s3 += buffer[i + 3];
      }
      sums[t] = s0 + s1 + s2 + s3;
    });
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kReadBytes));
}

// Records the read bandwidth once MemoryRead has run: Google Benchmark
// reports it, and the Matvec cases divide by it.
class ReadBandwidthReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_name.function_name == "MemoryRead" && run.run_type == Run::RT_Iteration) {
        const auto it = run.counters.find("bytes_per_second");
        if (it != run.counters.end()) g_read_bytes_per_second = std::max(g_read_bytes_per_second, it->second.value);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

// Random weights: random payload bytes, sane f16 scales (the kernels' speed
// does not depend on the values).
std::vector<uint8_t> random_matrix(QuantFormat format, size_t rows, size_t cols) {
  std::vector<uint8_t> w(rows * row_bytes(format, cols));
  std::mt19937_64 rng(static_cast<uint64_t>(format) + 1);
  for (size_t i = 0; i + 8 <= w.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(w.data() + i, &v, 8);
  }
  const FormatTraits& t = format_traits(format);
  const uint16_t scale = f32_to_f16(0.01f);
  if (format == QuantFormat::F32 || format == QuantFormat::F16 || format == QuantFormat::BF16) {
    std::normal_distribution<float> normal;
    for (size_t i = 0; i < rows * cols; ++i) {
      const float v = normal(rng);
      if (format == QuantFormat::F32) std::memcpy(w.data() + 4 * i, &v, 4);
      const uint16_t h = format == QuantFormat::F16 ? f32_to_f16(v) : f32_to_bf16(v);
      if (format != QuantFormat::F32) std::memcpy(w.data() + 2 * i, &h, 2);
    }
    return w;
  }
  // Every f16 field of these blocks sits at offset 0, 2 (d, m/dmin) or at
  // the end (Q2_K..Q6_K); overwrite them all with a sane scale.
  const size_t n_blocks = w.size() / t.block_bytes;
  for (size_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = w.data() + b * t.block_bytes;
    switch (format) {
      case QuantFormat::Q2_K:
      case QuantFormat::Q3_K:
      case QuantFormat::Q6_K:
        std::memcpy(blk + t.block_bytes - 2, &scale, 2);
        if (format == QuantFormat::Q2_K) std::memcpy(blk + t.block_bytes - 4, &scale, 2);
        break;
      case QuantFormat::Q4_1:
      case QuantFormat::Q5_1:
      case QuantFormat::Q4_K:
      case QuantFormat::Q5_K:
        std::memcpy(blk + 2, &scale, 2);
        std::memcpy(blk, &scale, 2);
        break;
      default: std::memcpy(blk, &scale, 2); break;
    }
  }
  return w;
}

// Enough copies of one random matrix to stream from memory.
struct WeightSet {
  QuantFormat format;
  std::vector<std::vector<uint8_t>> copies;
};

const WeightSet& weights(QuantFormat format, size_t min_total_bytes) {
  static std::unique_ptr<WeightSet> cached;
  if (!cached || cached->format != format || cached->copies.size() * cached->copies[0].size() < min_total_bytes) {
    cached.reset();  // free the previous format's weights first
    auto set = std::make_unique<WeightSet>();
    set->format = format;
    set->copies.push_back(random_matrix(format, kOut, kIn));
    const size_t bytes = set->copies[0].size();
    while (set->copies.size() * bytes < min_total_bytes) set->copies.push_back(set->copies[0]);
    cached = std::move(set);
  }
  return *cached;
}

std::vector<float> random_activations(size_t rows) {
  std::vector<float> x(rows * kIn);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  return x;
}

void Matvec(benchmark::State& state, QuantFormat format) {
  const WeightSet& set = weights(format, kStreamBytes);
  const std::vector<float> x = random_activations(1);
  std::vector<float> y(kOut);
  size_t next = 0;
  for (auto _ : state) {
    matvec(format, set.copies[next].data(), kOut, kIn, x.data(), y.data(), pool());
    next = (next + 1) % set.copies.size();
    benchmark::DoNotOptimize(y.data());
  }
  const double bytes = static_cast<double>(state.iterations()) * static_cast<double>(set.copies[0].size());
  state.counters["weight_GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsRate);
  if (g_read_bytes_per_second > 0) {
    state.counters["pct_of_read_bw"] =
        benchmark::Counter(100.0 * bytes / g_read_bytes_per_second, benchmark::Counter::kIsRate);
  }
  state.SetLabel(kernel_target_name());
}

void Matmul(benchmark::State& state, QuantFormat format) {
  const size_t rows = static_cast<size_t>(state.range(0));
  const WeightSet& set = weights(format, 0);
  const std::vector<float> x = random_activations(rows);
  std::vector<float> y(rows * kOut);
  for (auto _ : state) {
    matmul(format, set.copies[0].data(), kOut, kIn, x.data(), rows, y.data(), pool());
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * static_cast<double>(kOut) * kIn * static_cast<double>(rows);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel(kernel_target_name());
}

constexpr QuantFormat kFormats[] = {
    QuantFormat::F32,  QuantFormat::F16,  QuantFormat::BF16, QuantFormat::Q8_0,   QuantFormat::Q4_0,
    QuantFormat::Q4_1, QuantFormat::Q5_0, QuantFormat::Q5_1, QuantFormat::Q2_K,   QuantFormat::Q3_K,
    QuantFormat::Q4_K, QuantFormat::Q5_K, QuantFormat::Q6_K, QuantFormat::IQ4_NL, QuantFormat::IQ4_XS,
};

void register_benchmarks() {
  benchmark::RegisterBenchmark("MemoryRead", MemoryRead)->UseRealTime()->MinTime(1.0);
  for (QuantFormat f : kFormats) {
    const std::string name(format_traits(f).name);
    benchmark::RegisterBenchmark(("Matvec/" + name).c_str(), Matvec, f)->UseRealTime()->MinTime(1.0);
  }
  for (QuantFormat f : kFormats) {
    const std::string name(format_traits(f).name);
    benchmark::RegisterBenchmark(("Matmul/" + name).c_str(), Matmul, f)
        ->Arg(8)
        ->Arg(64)
        ->Arg(512)
        ->UseRealTime()
        ->MinTime(0.5)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace lamina::quant

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  lamina::quant::register_benchmarks();
  lamina::quant::ReadBandwidthReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
