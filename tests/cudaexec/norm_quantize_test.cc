// The decode step's norm that quantizes its own output: the blocks must be
// byte-identical to quantize_row_ref of the f32 rows it stores (which the
// matrix products were checked against), and the rows must be the RMSNorm.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "lamina/cudaexec/kernel_check.h"
#include "lamina/quant/format.h"
#include "lamina/quant/reference.h"

namespace lamina::cudaexec {
namespace {

using quant::QuantFormat;

struct Case {
  QuantFormat weight_format;  // selects the activation format (Q8_0, Q8_1, Q8_K)
  uint32_t n;
  uint32_t n_rows;
};

std::string case_name(const Case& c) {
  return std::string(quant::format_traits(c.weight_format).name) + " n=" + std::to_string(c.n) +
         " rows=" + std::to_string(c.n_rows);
}

// The quantized blocks `got` (as check_quantize_activations returns them)
// equal quantize_row_ref of each of the n_rows f32 rows the launch stored.
void expect_blocks_of_rows(const Case& c, const std::vector<uint8_t>& got, const std::vector<float>& rows) {
  const QuantFormat act = quant::format_traits(c.weight_format).activation;
  const std::size_t row_bytes = quant::row_bytes(act, c.n);
  ASSERT_EQ(got.size(), row_bytes * c.n_rows);
  std::vector<uint8_t> want(row_bytes);
  for (uint32_t r = 0; r < c.n_rows; ++r) {
    quant::quantize_row_ref(act, rows.data() + std::size_t{r} * c.n, want.data(), c.n);
    for (std::size_t b = 0; b < row_bytes; ++b) {
      ASSERT_EQ(got[std::size_t{r} * row_bytes + b], want[b]) << "row " << r << " byte " << b;
    }
  }
}

TEST(NormQuantize, BlocksEqualReferenceOfNormedRows) {
  const Case cases[] = {
      {QuantFormat::Q4_0, 896, 1},  {QuantFormat::Q4_0, 896, 5},   {QuantFormat::Q5_0, 4096, 3},
      {QuantFormat::Q4_1, 2048, 2}, {QuantFormat::Q4_K, 4096, 1},  {QuantFormat::Q6_K, 4096, 4},
      {QuantFormat::Q4_K, 512, 3},  {QuantFormat::Q8_0, 8192, 2},  {QuantFormat::Q6_K, 8192, 1},
      {QuantFormat::Q4_0, 96, 2},
  };
  std::mt19937 rng(20261121);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_scale(-2.0f, 2.0f);
  const float eps = 1e-6f;
  for (const Case& c : cases) {
    SCOPED_TRACE(case_name(c));
    std::vector<float> x(std::size_t{c.n} * c.n_rows), w(c.n);
    for (uint32_t r = 0; r < c.n_rows; ++r) {
      const float scale = std::pow(10.0f, log_scale(rng));
      for (uint32_t i = 0; i < c.n; ++i) x[std::size_t{r} * c.n + i] = normal(rng) * scale;
    }
    for (float& v : w) v = 1.0f + 0.5f * normal(rng);

    std::vector<float> normed;
    const std::vector<uint8_t> got =
        check_norm_quantize(c.weight_format, x.data(), w.data(), eps, c.n, c.n_rows, normed);
    ASSERT_FALSE(got.empty()) << "format and length should be covered";
    ASSERT_EQ(normed.size(), x.size());

    for (uint32_t r = 0; r < c.n_rows; ++r) {
      const float* xr = x.data() + std::size_t{r} * c.n;
      const float* yr = normed.data() + std::size_t{r} * c.n;
      double sq = 0.0;
      for (uint32_t i = 0; i < c.n; ++i) sq += static_cast<double>(xr[i]) * xr[i];
      const double s = 1.0 / std::sqrt(sq / c.n + eps);
      for (uint32_t i = 0; i < c.n; ++i) {
        const double ref = xr[i] * s * w[i];
        ASSERT_NEAR(yr[i], ref, 1e-6 * std::fabs(ref) + 1e-30) << "row " << r << " value " << i;
      }
    }
    expect_blocks_of_rows(c, got, normed);
  }
}

// Formats and lengths the fused launch does not take report so (the decode
// step then norms and quantizes in two launches).
TEST(NormQuantize, UncoveredCasesLaunchNothing) {
  const std::vector<float> x(896, 1.0f), w(896, 1.0f);
  std::vector<float> normed;
  EXPECT_TRUE(check_norm_quantize(QuantFormat::Q4_K, x.data(), w.data(), 1e-6f, 896, 1, normed).empty());
  EXPECT_TRUE(check_norm_quantize(QuantFormat::F16, x.data(), w.data(), 1e-6f, 896, 1, normed).empty());
}

// The FFN activation that quantizes its own output for the down projection:
// SiLU(gate) * up (SiLU in double, rounded once), blocks byte-identical to
// quantize_row_ref of the rows it stores.
TEST(SiluQuantize, BlocksEqualReferenceOfActivatedRows) {
  const Case cases[] = {
      {QuantFormat::Q4_0, 4864, 1}, {QuantFormat::Q4_1, 512, 3}, {QuantFormat::Q4_K, 14336, 1},
      {QuantFormat::Q6_K, 4864, 4}, {QuantFormat::Q8_0, 256, 2}, {QuantFormat::IQ4_XS, 8960, 2},
  };
  std::mt19937 rng(20261125);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const Case& c : cases) {
    SCOPED_TRACE(case_name(c));
    std::vector<float> gate(std::size_t{c.n} * c.n_rows), up(gate.size());
    for (float& v : gate) v = 3.0f * normal(rng);
    for (float& v : up) v = normal(rng);
    std::vector<float> out;
    const std::vector<uint8_t> got = check_silu_quantize(c.weight_format, gate.data(), up.data(), c.n, c.n_rows, out);
    ASSERT_FALSE(got.empty()) << "format and length should be covered";
    ASSERT_EQ(out.size(), gate.size());
    for (std::size_t k = 0; k < out.size(); ++k) {
      const double g = gate[k];
      const float ref = static_cast<float>(g / (1.0 + std::exp(-g))) * up[k];
      ASSERT_NEAR(out[k], ref, 1e-6 * std::fabs(ref) + 1e-30) << "value " << k;
    }
    expect_blocks_of_rows(c, got, out);
  }
  std::vector<float> out;
  const std::vector<float> ones(896, 1.0f);
  EXPECT_TRUE(check_silu_quantize(QuantFormat::Q4_0, ones.data(), ones.data(), 896, 1, out).empty())
      << "896 values are not whole 256-value groups";
  EXPECT_TRUE(check_silu_quantize(QuantFormat::F16, ones.data(), ones.data(), 1024, 1, out).empty());
}

}  // namespace
}  // namespace lamina::cudaexec
