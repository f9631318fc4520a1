// Prefill-shaped matrix products per weight format: the tensor-core path
// against the matvec kernels at the same row counts. Reports microseconds,
// TFLOP/s (2 * n_out * n_in * n_rows per launch) and activation rows per
// second. The weights are real quantize_row_ref rows (16 distinct rows
// repeated, so setting up a 14336 x 4096 matrix stays quick).
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "lamina/cudaexec/device.h"
#include "lamina/cudaexec/kernel_check.h"
#include "lamina/quant/format.h"
#include "lamina/quant/reference.h"

namespace {

using lamina::quant::QuantFormat;

constexpr QuantFormat kFormats[] = {QuantFormat::Q4_0, QuantFormat::Q5_0, QuantFormat::Q8_0,
                                    QuantFormat::Q4_K, QuantFormat::Q5_K, QuantFormat::Q6_K};

struct Shape {
  uint32_t n_out;
  uint32_t n_in;
};
constexpr Shape kShapes[] = {{14336, 4096}, {4096, 4096}, {4864, 896}, {896, 896}};
constexpr uint32_t kRowCounts[] = {16, 32, 64, 512};

std::vector<uint8_t> weights(QuantFormat format, const Shape& s, std::mt19937& rng) {
  constexpr uint32_t kDistinct = 16;
  const size_t rb = lamina::quant::row_bytes(format, s.n_in);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(s.n_in);
  std::vector<uint8_t> distinct(rb * kDistinct);
  for (uint32_t r = 0; r < kDistinct; ++r) {
    for (float& v : values) v = normal(rng);
    lamina::quant::quantize_row_ref(format, values.data(), distinct.data() + r * rb, s.n_in);
  }
  std::vector<uint8_t> w(rb * s.n_out);
  for (uint32_t r = 0; r < s.n_out; ++r) {
    std::copy_n(distinct.begin() + static_cast<std::ptrdiff_t>((r % kDistinct) * rb), rb, w.begin() + r * rb);
  }
  return w;
}

}  // namespace

int main() {
  if (lamina::cudaexec::device_count() == 0) {
    std::fprintf(stderr, "matmul_mma_bench: no CUDA device\n");
    return 1;
  }
  const lamina::cudaexec::DeviceInfo info = lamina::cudaexec::device_info(0);
  std::printf("%s, %d SMs\n", info.name.c_str(), info.sm_count);
  std::printf("%-6s %13s %5s | %9s %7s %10s | %9s %7s %10s\n", "format", "n_out x n_in", "rows", "mma us", "TFLOP/s",
              "rows/s", "matvec us", "TFLOP/s", "rows/s");
  std::fflush(stdout);
  std::mt19937 rng(7);
  for (QuantFormat f : kFormats) {
    for (const Shape& s : kShapes) {
      if (s.n_in % lamina::quant::format_traits(f).block_elems != 0) continue;
      const std::vector<uint8_t> w = weights(f, s, rng);
      for (uint32_t rows : kRowCounts) {
        const double flop = 2.0 * s.n_out * s.n_in * rows;
        const double mma_us = lamina::cudaexec::time_matmul_us(f, w.data(), s.n_out, s.n_in, rows, 40, true);
        const double mv_us = lamina::cudaexec::time_matmul_us(f, w.data(), s.n_out, s.n_in, rows, 20, false);
        std::printf("%-6s %6u x %-5u %5u | %9.1f %7.1f %10.0f | %9.1f %7.1f %10.0f\n",
                    std::string(lamina::quant::format_traits(f).name).c_str(), s.n_out, s.n_in, rows, mma_us,
                    flop / mma_us / 1e6, rows / mma_us * 1e6, mv_us, flop / mv_us / 1e6, rows / mv_us * 1e6);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
