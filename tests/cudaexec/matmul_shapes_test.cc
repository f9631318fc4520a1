// The GPU matrix products on the row lengths of real models (up to the 14336
// of Llama-3-8B's ffn_down), next to the CPU kernels, both against the
// scalar reference dot: each side's error must stay at f32 summation level.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "lamina/cudaexec/kernel_check.h"
#include "lamina/quant/format.h"
#include "lamina/quant/kernels.h"
#include "lamina/quant/reference.h"
#include "lamina/quant/thread_pool.h"

namespace lamina::cudaexec {
namespace {

using quant::QuantFormat;

struct Shape {
  QuantFormat format;
  uint32_t n_in;
};

class RealShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(RealShapes, GpuAndCpuMatchTheReferenceDot) {
  const auto [format, n_in] = GetParam();
  constexpr uint32_t n_out = 48;
  std::mt19937 rng(n_in * 31 + static_cast<uint32_t>(format));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::size_t row_bytes = quant::row_bytes(format, n_in);
  std::vector<uint8_t> w(row_bytes * n_out);
  std::vector<float> src(n_in);
  for (uint32_t o = 0; o < n_out; ++o) {
    for (auto& v : src) v = normal(rng) * 0.02f;
    quant::quantize_row_ref(format, src.data(), w.data() + o * row_bytes, n_in);
  }
  std::vector<float> x(n_in);
  for (auto& v : x) v = normal(rng);

  const auto gpu = check_matmul(format, w.data(), n_out, n_in, x.data(), 1);
  quant::ThreadPool pool(1);
  std::vector<float> cpu(n_out);
  quant::matmul(format, w.data(), n_out, n_in, x.data(), 1, cpu.data(), pool);

  const QuantFormat act_format = quant::format_traits(format).activation;
  std::vector<uint8_t> act(quant::row_bytes(act_format, n_in));
  quant::quantize_row_ref(act_format, x.data(), act.data(), n_in);
  std::vector<float> wrow(n_in), arow(n_in);
  quant::dequantize_row_ref(act_format, act.data(), arow.data(), n_in);
  double worst_gpu = 0, worst_cpu = 0;
  for (uint32_t o = 0; o < n_out; ++o) {
    const double ref = quant::dot_quantized_ref(format, w.data() + o * row_bytes, act.data(), n_in);
    quant::dequantize_row_ref(format, w.data() + o * row_bytes, wrow.data(), n_in);
    double magnitude = 0;
    for (uint32_t i = 0; i < n_in; ++i) magnitude += std::fabs(double{wrow[i]} * arow[i]);
    worst_gpu = std::max(worst_gpu, std::fabs(gpu[o] - ref) / magnitude);
    worst_cpu = std::max(worst_cpu, std::fabs(cpu[o] - ref) / magnitude);
  }
  std::printf("[   stat   ] %s n_in %u: max |err| / sum|w*a|: GPU %.2e, CPU %.2e\n",
              std::string(quant::format_traits(format).name).c_str(), n_in, worst_gpu, worst_cpu);
  EXPECT_LE(worst_gpu, 1e-5);
  EXPECT_LE(worst_cpu, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Llama3_8B, RealShapes,
                         ::testing::Values(Shape{QuantFormat::Q4_K, 4096}, Shape{QuantFormat::Q6_K, 4096},
                                           Shape{QuantFormat::Q4_K, 14336}, Shape{QuantFormat::Q6_K, 14336},
                                           Shape{QuantFormat::Q5_0, 4864}, Shape{QuantFormat::Q8_0, 14336},
                                           Shape{QuantFormat::Q4_0, 14336}));

}  // namespace
}  // namespace lamina::cudaexec
