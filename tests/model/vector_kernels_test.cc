// The SIMD loops of the CPU forward pass on every compiled Highway target this
// CPU supports, against their scalar forms: the attention's double dot and
// accumulation bit for bit, the SiLU-gated product within one f32 rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "hwy/tests/hwy_gtest.h"
#include "vector_kernels.h"

namespace lamina::model::cpu {
namespace {

// Lengths around the vector widths and the 8 partial sums, and head sizes.
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

TEST_P(VectorKernels, DotF64BitIdenticalToScalar) {
  std::mt19937 rng(11);
  for (std::size_t n : kLengths) {
    for (int trial = 0; trial < 20; ++trial) {
      const std::vector<float> a = random_values(n, rng, 1.0f), b = random_values(n, rng, 3.0f);
      const double got = dot_f64(a.data(), b.data(), n);
      const double want = scalar::dot_f64(a.data(), b.data(), n);
      EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << "n=" << n << ": " << got << " vs " << want;
    }
  }
  expect_target();
}

TEST_P(VectorKernels, AddScaledF64BitIdenticalToScalar) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<double> weight(0.0, 1.0);
  for (std::size_t n : kLengths) {
    const std::vector<float> x = random_values(n, rng, 2.0f);
    std::vector<double> got(n), want(n);
    for (std::size_t i = 0; i < n; ++i) got[i] = want[i] = weight(rng) - 0.5;
    for (int step = 0; step < 5; ++step) {
      const double p = weight(rng);
      add_scaled_f64(p, x.data(), got.data(), n);
      scalar::add_scaled_f64(p, x.data(), want.data(), n);
    }
    EXPECT_TRUE(n == 0 || std::memcmp(got.data(), want.data(), n * sizeof(double)) == 0) << "n=" << n;
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
