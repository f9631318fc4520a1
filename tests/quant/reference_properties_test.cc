// Properties of the scalar reference on fresh random rows: zero rows, block
// checks, activation block fields, and the expected ordering of errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "lamina/quant/blocks.h"
#include "lamina/quant/format.h"
#include "lamina/quant/half.h"
#include "lamina/quant/reference.h"

namespace lamina::quant {
namespace {

constexpr size_t kRow = 3 * kQK_K;  // several super-blocks, an odd count of them

std::vector<float> gaussian_row(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> row(n);
  for (float& v : row) v = normal(rng);
  return row;
}

double round_trip_rmse(QuantFormat f, const std::vector<float>& x) {
  std::vector<std::byte> q(row_bytes(f, x.size()));
  std::vector<float> y(x.size());
  quantize_row_ref(f, x.data(), q.data(), x.size());
  dequantize_row_ref(f, q.data(), y.data(), x.size());
  double sum = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(y[i]) - static_cast<double>(x[i]);
    sum += d * d;
  }
  return std::sqrt(sum / static_cast<double>(x.size()));
}

TEST(ReferenceProperties, ZeroRowsStayZero) {
  const std::vector<float> zeros(kRow, 0.0f);
  for (QuantFormat f : kAllFormats) {
    std::vector<std::byte> q(row_bytes(f, kRow), std::byte{0x5a});
    std::vector<float> y(kRow, 1.0f);
    quantize_row_ref(f, zeros.data(), q.data(), kRow);
    dequantize_row_ref(f, q.data(), y.data(), kRow);
    for (float v : y) ASSERT_EQ(v, 0.0f) << format_traits(f).name;
  }
}

TEST(ReferenceProperties, PartialBlocksAreRejected) {
  std::vector<float> x(300, 1.0f);
  std::vector<std::byte> q(4096);
  EXPECT_THROW(quantize_row_ref(QuantFormat::Q4_K, x.data(), q.data(), 300), std::invalid_argument);
  EXPECT_THROW(dequantize_row_ref(QuantFormat::Q8_0, q.data(), x.data(), 40), std::invalid_argument);
  EXPECT_THROW(dot_ref(QuantFormat::IQ4_XS, q.data(), x.data(), 288), std::invalid_argument);
}

// More bits, less error; the non-linear codebook beats Q4_0 on Gaussian data.
TEST(ReferenceProperties, ErrorFollowsBitsPerWeight) {
  const auto x = gaussian_row(kRow, 7);
  std::map<QuantFormat, double> e;
  for (QuantFormat f : kAllFormats) e[f] = round_trip_rmse(f, x);
  using F = QuantFormat;
  EXPECT_GT(e[F::Q2_K], e[F::Q3_K]);
  EXPECT_GT(e[F::Q3_K], e[F::Q4_K]);
  EXPECT_GT(e[F::Q4_K], e[F::Q5_K]);
  EXPECT_GT(e[F::Q5_K], e[F::Q6_K]);
  EXPECT_GT(e[F::Q6_K], e[F::Q8_0]);
  EXPECT_GT(e[F::Q4_0], e[F::Q5_0]);
  EXPECT_GT(e[F::Q4_1], e[F::Q5_1]);
  EXPECT_GT(e[F::Q5_0], e[F::Q8_0]);
  EXPECT_GT(e[F::Q4_0], e[F::IQ4_NL]);
  EXPECT_GT(e[F::Q8_0], e[F::F16]);
  EXPECT_GT(e[F::BF16], e[F::F16]);
  EXPECT_EQ(e[F::F32], 0.0);
  // Sanity of the scale: 4-bit formats stay within ~12% of a unit Gaussian.
  for (F f : {F::Q4_0, F::Q4_1, F::Q4_K, F::IQ4_NL, F::IQ4_XS}) {
    EXPECT_LT(e[f], 0.12) << format_traits(f).name;
  }
}

TEST(ReferenceProperties, Q8KBlockSumsAndScale) {
  auto x = gaussian_row(kRow, 11);
  x[300] = -9.0f;  // block 1's extreme value is negative
  std::vector<BlockQ8_K> q(kRow / kQK_K);
  quantize_row_ref(QuantFormat::Q8_K, x.data(), q.data(), kRow);
  for (const BlockQ8_K& b : q) {
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += b.qs[g * 16 + j];
      EXPECT_EQ(b.bsums[g], sum);
    }
  }
  // The extreme value is represented exactly by -127 * d.
  EXPECT_EQ(q[1].qs[300 - kQK_K], -127);
  EXPECT_FLOAT_EQ(q[1].d * -127.0f, -9.0f);
}

TEST(ReferenceProperties, Q81StoresScaledSum) {
  const auto x = gaussian_row(2 * kQK, 13);
  std::vector<BlockQ8_1> q(2);
  quantize_row_ref(QuantFormat::Q8_1, x.data(), q.data(), x.size());
  for (size_t b = 0; b < q.size(); ++b) {
    float amax = 0.0f;
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      amax = std::max(amax, std::fabs(x[b * kQK + j]));
      sum += q[b].qs[j];
    }
    const float d = amax / 127;  // the unrounded scale, not the f16 one
    EXPECT_EQ(q[b].d, f32_to_f16(d));
    EXPECT_EQ(q[b].s, f32_to_f16(static_cast<float>(sum) * d));
  }
}

// The quantized-activation dot equals the plain dot once the activations are
// dequantized, for every weight format (including F16/BF16 activations).
TEST(ReferenceProperties, DotQuantizedAgreesWithDotOnDequantizedActivations) {
  const auto w = gaussian_row(kRow, 17);
  const auto x = gaussian_row(kRow, 19);
  for (QuantFormat f : kAllFormats) {
    if (!format_traits(f).is_weight_format) continue;
    const QuantFormat act = format_traits(f).activation;
    std::vector<std::byte> wq(row_bytes(f, kRow));
    std::vector<std::byte> aq(row_bytes(act, kRow));
    std::vector<float> a(kRow);
    quantize_row_ref(f, w.data(), wq.data(), kRow);
    quantize_row_ref(act, x.data(), aq.data(), kRow);
    dequantize_row_ref(act, aq.data(), a.data(), kRow);
    EXPECT_EQ(dot_quantized_ref(f, wq.data(), aq.data(), kRow), dot_ref(f, wq.data(), a.data(), kRow))
        << format_traits(f).name;
    // And the activation error is small next to the product's size.
    const double exact = dot_ref(f, wq.data(), x.data(), kRow);
    EXPECT_NEAR(dot_quantized_ref(f, wq.data(), aq.data(), kRow), exact, 0.05 * std::sqrt(double(kRow)))
        << format_traits(f).name;
  }
}

}  // namespace
}  // namespace lamina::quant
