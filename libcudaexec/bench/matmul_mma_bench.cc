// Matrix products per weight format at prefill and batched-decode row
// counts: the path matmul() picks, and each tensor-core tile shape, so the
// choice by row count can be checked. Reports microseconds and TFLOP/s
// (2 * n_out * n_in * n_rows per launch) of each; one row is the matvec.
// The weights are real quantize_row_ref rows (16 distinct rows repeated, so
// setting up a 14336 x 4096 matrix stays quick).
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <random>
#include <string>
#include <iterator>
#include <vector>

#include "lamina/cudaexec/device.h"
#include "lamina/cudaexec/kernel_check.h"
#include "lamina/quant/format.h"
#include "lamina/quant/reference.h"

namespace {

using lamina::quant::QuantFormat;

constexpr QuantFormat kFormats[] = {QuantFormat::Q4_K, QuantFormat::Q6_K, QuantFormat::Q4_0,
                                    QuantFormat::Q5_0, QuantFormat::Q8_0, QuantFormat::Q5_K,
                                    QuantFormat::Q2_K, QuantFormat::Q3_K, QuantFormat::IQ4_XS};

struct Shape {
  uint32_t n_out;
  uint32_t n_in;
};
// Llama-3-8B's q/o, gate/up, k/v and down; Qwen2-0.5B's gate/up, q/o, down, k/v.
constexpr Shape kShapes[] = {{4096, 4096}, {14336, 4096}, {1024, 4096}, {4096, 14336},
                             {4864, 896},  {896, 896},    {896, 4864},  {128, 896}};
constexpr uint32_t kRowCounts[] = {1, 8, 32, 64, 128, 512, 2048};
constexpr const char* kTileNames[] = {"large", "medium", "square", "thin", "small", "tiny", "s-tiny", "s-small", "s-thin"};
static_assert(std::size(kTileNames) == lamina::cudaexec::kMmaTileShapes);

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

// With arguments FORMAT N_OUT N_IN ROWS TILE (-1: auto), times that one
// case only (for profiling one kernel); with FORMAT... alone, those formats.
int run_one(char** argv) {
  const std::string name = argv[1];
  QuantFormat f = QuantFormat::F32;
  for (QuantFormat c : kFormats)
    if (name == lamina::quant::format_traits(c).name) f = c;
  if (f == QuantFormat::F32) {
    std::fprintf(stderr, "matmul_mma_bench: unknown format %s\n", name.c_str());
    return 2;
  }
  const Shape s{static_cast<uint32_t>(std::stoul(argv[2])), static_cast<uint32_t>(std::stoul(argv[3]))};
  const auto rows = static_cast<uint32_t>(std::stoul(argv[4]));
  const int tile = std::stoi(argv[5]);
  std::mt19937 rng(7);
  const std::vector<uint8_t> w = weights(f, s, rng);
  const double us = lamina::cudaexec::time_matmul_us(f, w.data(), s.n_out, s.n_in, rows, 20, tile);
  std::printf("%s %u x %u, %u rows, tile %d: %.1f us, %.1f TFLOP/s\n", name.c_str(), s.n_out, s.n_in, rows, tile, us,
              2.0 * s.n_out * s.n_in * rows / us / 1e6);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 6) return run_one(argv);
  if (lamina::cudaexec::device_count() == 0) {
    std::fprintf(stderr, "matmul_mma_bench: no CUDA device\n");
    return 1;
  }
  const lamina::cudaexec::DeviceInfo info = lamina::cudaexec::device_info(0);
  std::printf("%s, %d SMs\n", info.name.c_str(), info.sm_count);
  std::printf("%-6s %13s %5s | %9s %7s |", "format", "n_out x n_in", "rows", "auto us", "TFLOP/s");
  for (const char* t : kTileNames) std::printf(" %8s", t);
  std::printf("\n");
  std::fflush(stdout);
  std::mt19937 rng(7);
  for (QuantFormat f : kFormats) {
    // Named formats only, when some are named.
    bool named = argc == 1;
    for (int i = 1; i < argc; ++i) named = named || lamina::quant::format_traits(f).name == std::string(argv[i]);
    if (!named) continue;
    for (const Shape& s : kShapes) {
      if (s.n_in % lamina::quant::format_traits(f).block_elems != 0) continue;
      const std::vector<uint8_t> w = weights(f, s, rng);
      for (uint32_t rows : kRowCounts) {
        const double flop = 2.0 * s.n_out * s.n_in * rows;
        const double auto_us = lamina::cudaexec::time_matmul_us(f, w.data(), s.n_out, s.n_in, rows, 40);
        std::printf("%-6s %6u x %-5u %5u | %9.1f %7.1f |", std::string(lamina::quant::format_traits(f).name).c_str(),
                    s.n_out, s.n_in, rows, auto_us, flop / auto_us / 1e6);
        for (int tile = 0; tile < lamina::cudaexec::kMmaTileShapes && rows > 1; ++tile) {
          std::printf(" %8.1f", lamina::cudaexec::time_matmul_us(f, w.data(), s.n_out, s.n_in, rows, 20, tile));
        }
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
