// Matrix-vector product throughput of the GPU kernels, per weight format:
// weight bytes read per microsecond (GB/s) for decode-sized shapes, next to
// the device-to-device copy bandwidth of the same run (bytes read + written).
// The weights are real quantize_row_ref rows (16 distinct rows repeated, so
// setting up a 14336 x 4096 matrix stays quick).
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

constexpr QuantFormat kFormats[] = {
    QuantFormat::F32,  QuantFormat::F16,  QuantFormat::BF16, QuantFormat::Q4_0,   QuantFormat::Q4_1,
    QuantFormat::Q5_0, QuantFormat::Q5_1, QuantFormat::Q8_0, QuantFormat::Q2_K,   QuantFormat::Q3_K,
    QuantFormat::Q4_K, QuantFormat::Q5_K, QuantFormat::Q6_K, QuantFormat::IQ4_NL, QuantFormat::IQ4_XS,
    QuantFormat::MXFP4,
};

struct Shape {
  uint32_t n_out;
  uint32_t n_in;
};
constexpr Shape kShapes[] = {{14336, 4096}, {4096, 14336}, {4096, 4096}, {1536, 1536},
                             {896, 896},    {896, 4864},   {4864, 896}};

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
    std::fprintf(stderr, "matvec_bench: no CUDA device\n");
    return 1;
  }
  const lamina::cudaexec::DeviceInfo info = lamina::cudaexec::device_info(0);
  std::printf("%s, %d SMs\n", info.name.c_str(), info.sm_count);
  const double copy_gbs = lamina::cudaexec::copy_bandwidth_gbs(std::size_t{1} << 30, 20);
  std::printf("device-to-device copy (1 GiB, read + written): %.1f GB/s\n", copy_gbs);
  std::printf("%-7s %14s %10s %10s %7s\n", "format", "n_out x n_in", "us", "GB/s", "%copy");
  std::fflush(stdout);
  std::mt19937 rng(7);
  for (QuantFormat f : kFormats) {
    for (const Shape& s : kShapes) {
      if (s.n_in % lamina::quant::format_traits(f).block_elems != 0) continue;
      const std::vector<uint8_t> w = weights(f, s, rng);
      const double us = lamina::cudaexec::time_matvec_us(f, w.data(), s.n_out, s.n_in, 200);
      const double gbs = static_cast<double>(w.size()) / us / 1e3;
      std::printf("%-7s %7u x %-5u %10.2f %10.1f %6.1f%%\n",
                  std::string(lamina::quant::format_traits(f).name).c_str(), s.n_out, s.n_in, us, gbs,
                  100.0 * gbs / copy_gbs);
      std::fflush(stdout);
    }
  }
  return 0;
}
