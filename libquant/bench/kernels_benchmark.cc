// Kernel throughput on this machine, next to its memory read bandwidth:
//   MemoryRead      - all threads of the pool summing a 1 GiB buffer with
//                     full-width SIMD loads;
//   Matvec/<format> - one activation row against a 14336 x 4096 weight
//                     matrix (the decode step), in GB/s of weight bytes,
//                     next to the same kind of plain read of other weight
//                     matrices interleaved with it (read_GB/s), and the
//                     ratio of the two (pct_of_read);
//   Matmul/<format>/<rows> - 8, 64 or 512 activation rows (prompt
//                     processing), in GFLOP/s (2 flops per multiply-add);
//   .../<format>/packed/... - the same in the packed layout, for the
//                     formats this CPU runs faster so (lamina/quant/packed.h);
//                     GB/s still count the matrix's bytes in the file;
//   .../<format>/as_packed/... - the file's layout with the packed kernels'
//                     arithmetic (matmul_as_packed), for the formats it takes.
// Each call includes the quantization of its f32 activations. Matvec cycles
// through different random matrices totalling >= 512 MiB, so that they
// come from memory and not from the last-level cache, even for the small
// formats.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels_benchmark.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"

// The memory read kernel: full-width loads into 4 independent sums, so that
// it is limited by the memory and not by the core.
HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

uint64_t SumWords(const uint64_t* HWY_RESTRICT p, size_t n) {
  const hn::ScalableTag<uint64_t> d;
  const size_t N = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    s0 = hn::Add(s0, hn::Load(d, p + i));
    s1 = hn::Add(s1, hn::Load(d, p + i + N));
    s2 = hn::Add(s2, hn::Load(d, p + i + 2 * N));
    s3 = hn::Add(s3, hn::Load(d, p + i + 3 * N));
  }
  uint64_t sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) sum += p[i];
  return sum;
}

}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "lamina/quant/blocks.h"
#include "lamina/quant/format.h"
#include "lamina/quant/half.h"
#include "lamina/quant/kernels.h"
#include "lamina/quant/packed.h"
#include "lamina/quant/thread_pool.h"

namespace lamina::quant {
HWY_EXPORT(SumWords);

namespace {

constexpr size_t kOut = 14336;
constexpr size_t kIn = 4096;
constexpr size_t kReadBytes = size_t{1} << 30;
constexpr size_t kStreamBytes = size_t{512} << 20;

// SplitMix64: fast, and every copy gets different bytes (identical pages
// can be merged by the VM's host, which would fake the bandwidth).
struct FastRandom {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float uniform() { return static_cast<float>(static_cast<int64_t>(next()) >> 40) * 0x1p-23f; }
};

ThreadPool& pool() {
  static ThreadPool p(std::max(1u, std::thread::hardware_concurrency()));
  return p;
}

// Reads `bytes` at p with all threads of the pool; returns a checksum.
uint64_t read_all(const void* p, size_t bytes) {
  const auto* words = static_cast<const uint64_t*>(p);
  const size_t n = bytes / sizeof(uint64_t);
  std::vector<uint64_t> sums(pool().num_threads());
  pool().run_on_all([&](size_t t) {
    const auto [begin, end] = pool().thread_range(n, 1024, t);
    sums[t] = HWY_DYNAMIC_DISPATCH(SumWords)(words + begin, end - begin);
  });
  uint64_t total = 0;
  for (uint64_t v : sums) total += v;
  return total;
}

void MemoryRead(benchmark::State& state) {
  static const auto buffer = [] {
    auto b = hwy::AllocateAligned<uint64_t>(kReadBytes / sizeof(uint64_t));
    FastRandom rng{12345};
    for (size_t i = 0; i < kReadBytes / sizeof(uint64_t); ++i) b[i] = rng.next();
    return b;
  }();
  for (auto _ : state) benchmark::DoNotOptimize(read_all(buffer.get(), kReadBytes));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kReadBytes));
}

// Random weights: random payload bytes, sane f16 scales (the kernels' speed
// does not depend on the values).
std::vector<uint8_t> random_matrix(QuantFormat format, size_t rows, size_t cols, uint64_t seed) {
  std::vector<uint8_t> w(rows * row_bytes(format, cols));
  FastRandom rng{seed};
  for (size_t i = 0; i + 8 <= w.size(); i += 8) {
    const uint64_t v = rng.next();
    std::memcpy(w.data() + i, &v, 8);
  }
  if (format == QuantFormat::F32 || format == QuantFormat::F16 || format == QuantFormat::BF16) {
    for (size_t i = 0; i < rows * cols; ++i) {
      const float v = rng.uniform();
      if (format == QuantFormat::F32) {
        std::memcpy(w.data() + 4 * i, &v, 4);
      } else {
        const uint16_t h = format == QuantFormat::F16 ? f32_to_f16(v) : f32_to_bf16(v);
        std::memcpy(w.data() + 2 * i, &h, 2);
      }
    }
    return w;
  }
  // Every f16 field of these blocks sits at offset 0, 2 (d, m/dmin) or at
  // the end (Q2_K..Q6_K); overwrite them all with a sane scale.
  const FormatTraits& t = format_traits(format);
  const uint16_t scale = f32_to_f16(0.01f);
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

// How a benchmark multiplies: the file's layout, the packed one, or the
// file's layout with the packed arithmetic (lamina/quant/packed.h).
enum class Layout { kFile, kPacked, kFileAsPacked };

// Enough different random matrices to stream from memory, in the file
// layout or packed.
struct WeightSet {
  QuantFormat format;
  Layout layout;
  bool packed;
  std::vector<std::vector<uint8_t>> copies;
  std::vector<PackedWeights> packed_copies;

  size_t count() const { return packed ? packed_copies.size() : copies.size(); }
  // The matrix's bytes in the file (a packed copy may hold a few % more),
  // so that both layouts are measured against the same read.
  size_t bytes() const { return kOut * row_bytes(format, kIn); }
  const void* data(size_t i) const { return packed ? packed_copies[i].data() : copies[i].data(); }

  // y = x (n_rows rows) times matrix i, the activations quantized in the call.
  void multiply(size_t i, const float* x, size_t n_rows, float* y) const {
    if (layout == Layout::kFile) return matmul(format, copies[i].data(), kOut, kIn, x, n_rows, y, pool());
    static QuantizedActivations scratch;
    quantize_activations(kernel_activation_format(format), x, n_rows, kIn, scratch, n_rows > 1 ? &pool() : nullptr);
    if (layout == Layout::kFileAsPacked) return matmul_as_packed(format, copies[i].data(), kOut, kIn, scratch, y, pool());
    matmul(packed_copies[i], scratch, y, pool());
  }
};

const WeightSet& weights(QuantFormat format, Layout layout, size_t min_total_bytes) {
  static std::unique_ptr<WeightSet> cached;
  if (!cached || cached->format != format || cached->layout != layout ||
      cached->count() * cached->bytes() < min_total_bytes) {
    cached.reset();  // free the previous format's weights first
    auto set = std::make_unique<WeightSet>();
    set->format = format;
    set->layout = layout;
    set->packed = layout == Layout::kPacked;
    do {
      std::vector<uint8_t> w = random_matrix(format, kOut, kIn, set->count() + 1);
      if (set->packed) {
        set->packed_copies.push_back(pack_weights(format, w.data(), kOut, kIn, &pool()));
      } else {
        set->copies.push_back(std::move(w));
      }
    } while (set->count() * set->bytes() < min_total_bytes);
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

// Each iteration also reads, with the same threads, a matrix that neither
// this nor the next few iterations multiply (so it is not in the cache);
// the percentage compares the two over the same stretch of time, as this
// machine's memory bandwidth varies from second to second.
void Matvec(benchmark::State& state, QuantFormat format, Layout layout) {
  const WeightSet& set = weights(format, layout, kStreamBytes);
  const size_t n = set.count();
  const size_t bytes = set.bytes();
  const std::vector<float> x = random_activations(1);
  std::vector<float> y(kOut);
  size_t next = 0;
  double read_seconds = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    set.multiply(next, x.data(), 1, y.data());
    const auto t1 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(read_all(set.data((next + n / 2) % n), bytes));
    const auto t2 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    read_seconds += std::chrono::duration<double>(t2 - t1).count();
    next = (next + 1) % n;
    benchmark::DoNotOptimize(y.data());
  }
  const double total = static_cast<double>(state.iterations()) * static_cast<double>(bytes);
  state.counters["weight_GB/s"] = benchmark::Counter(total * 1e-9, benchmark::Counter::kIsRate);
  state.counters["read_GB/s"] = benchmark::Counter(total * 1e-9 / read_seconds);
  // (bytes / matvec time) / (bytes / read time), in percent.
  state.counters["pct_of_read"] = benchmark::Counter(100.0 * read_seconds, benchmark::Counter::kIsRate);
  state.SetLabel(kernel_target_name());
}

void Matmul(benchmark::State& state, QuantFormat format, Layout layout) {
  const size_t rows = static_cast<size_t>(state.range(0));
  const WeightSet& set = weights(format, layout, 0);
  const std::vector<float> x = random_activations(rows);
  std::vector<float> y(rows * kOut);
  for (auto _ : state) {
    set.multiply(0, x.data(), rows, y.data());
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
  // Each format in the file layout, then the packed layouts this CPU runs
  // faster ("<format>/packed"), then those of them matmul_as_packed takes.
  std::vector<std::pair<QuantFormat, Layout>> variants;
  for (QuantFormat f : kFormats) variants.emplace_back(f, Layout::kFile);
  for (QuantFormat f : kFormats) {
    if (packed_layout_is_faster(f)) variants.emplace_back(f, Layout::kPacked);
  }
  for (QuantFormat f : kFormats) {
    if (packed_layout_is_faster(f) && has_packed_arithmetic_on_file_layout(f)) {
      variants.emplace_back(f, Layout::kFileAsPacked);
    }
  }
  const auto name_of = [](QuantFormat f, Layout layout) {
    return std::string(format_traits(f).name) +
           (layout == Layout::kPacked ? "/packed" : layout == Layout::kFileAsPacked ? "/as_packed" : "");
  };
  for (const auto& [f, layout] : variants) {
    benchmark::RegisterBenchmark(("Matvec/" + name_of(f, layout)).c_str(), Matvec, f, layout)
        ->UseManualTime()
        ->MinTime(1.0);
  }
  for (const auto& [f, layout] : variants) {
    benchmark::RegisterBenchmark(("Matmul/" + name_of(f, layout)).c_str(), Matmul, f, layout)
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
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
#endif  // HWY_ONCE
