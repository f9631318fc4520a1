// The SIMD loops of the CPU forward pass on every compiled Highway target this
// CPU supports, against their scalar forms: the attention's f32 dots,
// accumulation and exp within the rounding error f32 allows (f16 rows giving
// the bits of the same f32 rows), the f16 conversions bit for bit, the
// SiLU-gated product within one f32 rounding, q8_0 rows widened bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "hwy/tests/hwy_gtest.h"
#include "lamina/quant/reference.h"
#include "vector_kernels.h"

namespace lamina::model::cpu {
namespace {

// Lengths around the vector widths and the 8 partial sums, and head sizes;
// row counts around the lane counts (rows are summed a vector of them at once).
constexpr std::size_t kLengths[] = {0, 1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 128, 257};

std::vector<float> random_values(std::size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

class VectorKernels : public hwy::TestWithParamTarget {
 protected:
  void expect_target() const { EXPECT_STREQ(vector_kernels_target(), hwy::TargetName(GetParam())); }
};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(VectorKernels);

// Rows as the KV cache holds them: f32, or f16 bits of values rounded the
// cache's way (the same values for both forms, so one reference serves).
struct Rows {
  std::vector<float> f32;
  std::vector<uint16_t> f16;
};
Rows random_rows(std::size_t n_rows, std::size_t stride, std::mt19937& rng, float scale) {
  Rows rows{random_values(n_rows * stride, rng, scale), {}};
  rows.f16.resize(rows.f32.size());
  scalar::f32_to_f16_row(rows.f32.data(), rows.f16.data(), rows.f32.size());
  scalar::f16_to_f32_row(rows.f16.data(), rows.f32.data(), rows.f32.size());
  return rows;
}

// The f32 rounding error a sum of n terms can carry, computed in any order
// (with or without fused multiply-adds): at most n units of 2^-24 of the sum
// of the terms' magnitudes, plus one rounding of the result.
double sum_error_bound(std::size_t n_terms, double magnitude) {
  return (static_cast<double>(n_terms) + 1.0) * 0x1p-24 * 1.01 * magnitude;
}

TEST_P(VectorKernels, DotRowsWithinF32RoundingOfExact) {
  std::mt19937 rng(11);
  for (std::size_t n : kLengths) {
    for (std::size_t n_rows : {1, 3, 4, 5, 9, 16, 17, 33}) {
      const std::size_t stride = n + 3;  // rows apart as a head's rows in a wider cache row
      const std::vector<float> a = random_values(n, rng, 1.0f);
      const Rows rows = random_rows(n_rows, stride, rng, 3.0f);
      std::vector<double> exact(n_rows), exact_f16(n_rows);
      std::vector<float> got_f32(n_rows), got_f16(n_rows);
      scalar::dot_rows(a.data(), rows.f32.data(), stride, n_rows, n, exact.data());
      scalar::dot_rows(a.data(), rows.f16.data(), stride, n_rows, n, exact_f16.data());
      dot_rows(a.data(), n, 1, rows.f32.data(), stride, n_rows, n, got_f32.data(), n_rows);
      dot_rows(a.data(), n, 1, rows.f16.data(), stride, n_rows, n, got_f16.data(), n_rows);
      for (std::size_t r = 0; r < n_rows; ++r) {
        double magnitude = 0.0;
        for (std::size_t i = 0; i < n; ++i) magnitude += std::fabs(double(a[i]) * rows.f32[r * stride + i]);
        const double bound = sum_error_bound(n, magnitude);
        EXPECT_EQ(exact_f16[r], exact[r]) << "the rows are f16 values";
        EXPECT_NEAR(got_f32[r], exact[r], bound) << "f32 n=" << n << " row " << r << " of " << n_rows;
        // The same rows in either form give the same bits.
        EXPECT_EQ(std::memcmp(&got_f16[r], &got_f32[r], sizeof(float)), 0) << "f16 n=" << n << " row " << r;
      }
      // A row's result does not depend on how many rows come with it.
      for (std::size_t r = 0; r < n_rows; ++r) {
        float alone = 0.0f;
        dot_rows(a.data(), n, 1, rows.f16.data() + r * stride, stride, 1, n, &alone, 1);
        EXPECT_EQ(std::memcmp(&alone, &got_f16[r], sizeof(float)), 0) << "n=" << n << " row " << r;
      }
    }
  }
  expect_target();
}

TEST_P(VectorKernels, AccumulateRowsWithinF32RoundingOfExact) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> weight(0.0f, 1.0f);
  for (std::size_t n : kLengths) {
    for (std::size_t n_rows : {1, 2, 7, 33}) {
      const std::size_t stride = n + 5;
      const Rows rows = random_rows(n_rows, stride, rng, 2.0f);
      std::vector<float> p(n_rows), start(n);
      for (float& x : p) x = weight(rng);
      for (float& x : start) x = weight(rng) - 0.5f;
      std::vector<double> exact(start.begin(), start.end());
      std::vector<float> got_f32 = start, got_f16 = start;
      scalar::accumulate_rows(p.data(), rows.f32.data(), stride, n_rows, n, exact.data());
      accumulate_rows(p.data(), n_rows, 1, rows.f32.data(), stride, n_rows, n, got_f32.data(), n);
      accumulate_rows(p.data(), n_rows, 1, rows.f16.data(), stride, n_rows, n, got_f16.data(), n);
      for (std::size_t i = 0; i < n; ++i) {
        double magnitude = std::fabs(start[i]);
        for (std::size_t r = 0; r < n_rows; ++r) magnitude += std::fabs(double(p[r]) * rows.f32[r * stride + i]);
        EXPECT_NEAR(got_f32[i], exact[i], sum_error_bound(n_rows, magnitude)) << "n=" << n << " i=" << i;
        EXPECT_EQ(std::memcmp(&got_f16[i], &got_f32[i], sizeof(float)), 0) << "f16 n=" << n << " i=" << i;
      }
    }
  }
  expect_target();
}

// Several queries over the same rows in one call (the heads sharing a KV
// head) give each query the bits it gets alone, for query counts across the
// kernels' groupings, f32 and f16 rows.
TEST_P(VectorKernels, SeveralQueriesGiveEachQuerysBitsAlone) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> weight(0.0f, 1.0f);
  for (std::size_t n : {1, 15, 16, 17, 64, 100, 128, 257}) {
    for (std::size_t n_rows : {1, 3, 4, 5, 16, 33, 64}) {
      for (std::size_t n_queries : {2, 3, 4, 5, 6, 7, 8, 9}) {
        const std::size_t stride = n + 3, a_stride = n + 1, p_stride = n_rows + 2, acc_stride = n + 2;
        const std::vector<float> a = random_values(n_queries * a_stride, rng, 1.0f);
        const Rows rows = random_rows(n_rows, stride, rng, 3.0f);
        std::vector<float> p(n_queries * p_stride), start(n_queries * acc_stride);
        for (float& x : p) x = weight(rng);
        for (float& x : start) x = weight(rng) - 0.5f;
        for (int form = 0; form < 2; ++form) {
          const bool f16 = form == 1;
          std::vector<float> dots(n_queries * n_rows), acc = start;
          if (f16) {
            dot_rows(a.data(), a_stride, n_queries, rows.f16.data(), stride, n_rows, n, dots.data(), n_rows);
            accumulate_rows(p.data(), p_stride, n_queries, rows.f16.data(), stride, n_rows, n, acc.data(), acc_stride);
          } else {
            dot_rows(a.data(), a_stride, n_queries, rows.f32.data(), stride, n_rows, n, dots.data(), n_rows);
            accumulate_rows(p.data(), p_stride, n_queries, rows.f32.data(), stride, n_rows, n, acc.data(), acc_stride);
          }
          for (std::size_t q = 0; q < n_queries; ++q) {
            std::vector<float> alone_dots(n_rows);
            std::vector<float> alone_acc(start.begin() + q * acc_stride, start.begin() + q * acc_stride + n);
            if (f16) {
              dot_rows(a.data() + q * a_stride, n, 1, rows.f16.data(), stride, n_rows, n, alone_dots.data(), n_rows);
              accumulate_rows(p.data() + q * p_stride, n_rows, 1, rows.f16.data(), stride, n_rows, n, alone_acc.data(), n);
            } else {
              dot_rows(a.data() + q * a_stride, n, 1, rows.f32.data(), stride, n_rows, n, alone_dots.data(), n_rows);
              accumulate_rows(p.data() + q * p_stride, n_rows, 1, rows.f32.data(), stride, n_rows, n, alone_acc.data(), n);
            }
            EXPECT_EQ(std::memcmp(dots.data() + q * n_rows, alone_dots.data(), n_rows * sizeof(float)), 0)
                << (f16 ? "f16" : "f32") << " dots n=" << n << " rows " << n_rows << " query " << q << " of " << n_queries;
            EXPECT_EQ(std::memcmp(acc.data() + q * acc_stride, alone_acc.data(), n * sizeof(float)), 0)
                << (f16 ? "f16" : "f32") << " acc n=" << n << " rows " << n_rows << " query " << q << " of " << n_queries;
            // Nothing written past a query's n values.
            for (std::size_t i = n; i < acc_stride && q + 1 < n_queries; ++i)
              EXPECT_EQ(acc[q * acc_stride + i], start[q * acc_stride + i]);
          }
        }
      }
    }
  }
  expect_target();
}

// q8_0 rows, a head's slice of wider cache rows, widened as libquant's
// reference dequantizer does, bit for bit (d * q is exact in f32); scales of
// every kind, subnormal and zero included.
TEST_P(VectorKernels, DequantizeQ8_0RowsBitIdenticalToReference) {
  std::mt19937 rng(16);
  for (std::size_t n : {32, 64, 128, 256}) {
    for (std::size_t n_rows : {1, 3, 64}) {
      const std::size_t stride = n / quant::kQK + 2;
      std::vector<float> values = random_values(n_rows * stride * quant::kQK, rng, 3.0f);
      values[0] = 1e-6f;                                        // a subnormal f16 scale
      for (int i = 0; i < quant::kQK; ++i) values[quant::kQK + i] = 0.0f;  // a zero block
      std::vector<quant::BlockQ8_0> rows(values.size() / quant::kQK);
      quant::quantize_row_ref(quant::QuantFormat::Q8_0, values.data(), rows.data(), values.size());
      std::vector<float> got(n_rows * n), want(n_rows * n);
      dequantize_q8_0_rows(rows.data(), stride, n_rows, n, got.data());
      for (std::size_t r = 0; r < n_rows; ++r)
        quant::dequantize_row_ref(quant::QuantFormat::Q8_0, rows.data() + r * stride, want.data() + r * n, n);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "n=" << n << " rows " << n_rows;
    }
  }
  expect_target();
}

// Highway's f32 exp is within 2 ulp (its own tests' limit is 1) of the exp
// of its argument, and the argument x - shift is rounded to f32 first, which
// moves exp by up to |x - shift| * 2^-24 relative; the sum adds n roundings.
TEST_P(VectorKernels, ExpShiftSumWithinRoundingOfExact) {
  std::mt19937 rng(15);
  for (std::size_t n : kLengths) {
    std::vector<float> x = random_values(n, rng, 6.0f);
    if (n > 2) x[1] = -200.0f;  // underflows to zero
    const float shift = n ? *std::max_element(x.begin(), x.end()) : 0.0f;
    std::vector<double> exact(n);
    const double exact_sum = scalar::exp_shift_sum(x.data(), n, shift, exact.data());
    std::vector<float> got = x;
    const float sum = exp_shift_sum(got.data(), n, shift);
    double worst_relative = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double relative = 2 * 0x1p-23 + std::fabs(double(x[i]) - shift) * 0x1p-24;
      worst_relative = std::max(worst_relative, relative);
      EXPECT_NEAR(got[i], exact[i], relative * exact[i] + 1e-45) << "i=" << i;
    }
    EXPECT_NEAR(sum, exact_sum, (worst_relative + static_cast<double>(n + 1) * 0x1p-24) * exact_sum) << "n=" << n;
  }
  expect_target();
}

// Every f16 code widens as the scalar conversion does (nan payloads kept,
// quiet ones: the cache writes no signalling nan), and f32 values of every
// kind round as the scalar conversion rounds them.
TEST_P(VectorKernels, HalfConversionsBitIdenticalToScalar) {
  std::vector<uint16_t> codes;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const bool signalling_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0 && (h & 0x200) == 0;
    if (!signalling_nan) codes.push_back(static_cast<uint16_t>(h));
  }
  std::vector<float> got(codes.size()), want(codes.size());
  f16_to_f32_row(codes.data(), got.data(), codes.size() - 5);  // a ragged end too
  scalar::f16_to_f32_row(codes.data(), want.data(), codes.size() - 5);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), (codes.size() - 5) * sizeof(float)), 0);

  std::mt19937 rng(14);
  std::vector<float> values = {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, -1e9f, INFINITY, -INFINITY, NAN,
                               0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-14f, 0x1.ffcp-15f, 1e-30f, 1.0f + 0x1p-11f,
                               1.0f + 0x3p-11f};
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 100000; ++i) {
    const uint32_t bits = any_bits(rng);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    values.push_back(f);
    values.push_back(std::ldexp(static_cast<float>(i % 4096) / 4096.0f, static_cast<int>(i % 40) - 30));
  }
  std::vector<uint16_t> h_got(values.size()), h_want(values.size());
  f32_to_f16_row(values.data(), h_got.data(), values.size() - 3);
  scalar::f32_to_f16_row(values.data(), h_want.data(), values.size() - 3);
  for (std::size_t i = 0; i + 3 < values.size(); ++i) {
    ASSERT_EQ(h_got[i], h_want[i]) << "i=" << i << " value " << values[i];
  }
  expect_target();
}

// Highway's exp is within 1 ulp of the correctly rounded double, which the
// rounding to f32 and the product with up hide but for the last f32 bit.
TEST_P(VectorKernels, SiluMulWithinOneRoundingOfScalar) {
  std::mt19937 rng(13);
  for (std::size_t n : kLengths) {
    std::vector<float> gate = random_values(n, rng, 4.0f), up = random_values(n, rng, 1.0f);
    if (n > 4) gate[0] = -120.0f, gate[1] = 90.0f, gate[2] = 0.0f, gate[3] = -0.0f;  // both tails of exp, zeros
    std::vector<float> got(n, NAN), want(n, NAN);
    silu_mul(gate.data(), up.data(), got.data(), n);
    scalar::silu_mul(gate.data(), up.data(), want.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const float tol = 2.0f * std::nextafter(std::fabs(want[i]), INFINITY) - 2.0f * std::fabs(want[i]);
      EXPECT_NEAR(got[i], want[i], tol) << "n=" << n << " i=" << i << " gate " << gate[i] << " up " << up[i];
    }
  }
  expect_target();
}

// In place (out == gate), as the forward pass calls it.
TEST_P(VectorKernels, SiluMulInPlace) {
  std::mt19937 rng(14);
  std::vector<float> gate = random_values(100, rng, 3.0f);
  const std::vector<float> up = random_values(100, rng, 1.0f);
  std::vector<float> want(100);
  silu_mul(gate.data(), up.data(), want.data(), 100);
  silu_mul(gate.data(), up.data(), gate.data(), 100);
  EXPECT_EQ(std::memcmp(gate.data(), want.data(), sizeof(float) * 100), 0);
}

}  // namespace
}  // namespace lamina::model::cpu
