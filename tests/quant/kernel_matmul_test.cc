// The SIMD matmul kernels, on every compiled Highway target this CPU
// supports, against the scalar reference dots; with 1 and 2 threads; and
// their batch and thread-count invariance.
//
// Tolerance: the integer part of every block dot is exact, so the kernels
// differ from the f64 reference only by f32 rounding: the products
// d_w * d_a, the lane-wise accumulation of the scaled blocks (n / 128 or
// n / 256 terms per lane chain) and the final lane sum; the reference itself
// rounds each dequantized value to f32. Each rounding is at most 2^-24
// relative to a partial sum bounded by S = sum_i |w_i * a_i|; measured on
// every target with rows of up to 14336 values the error stays below
// 5e-8 * S (the most, 4.5e-8, for float weights on the 1-lane baseline
// target, whose f32 chains are the longest; its block formats sum in f64), so
// 1e-6 * S leaves a wide margin, while a misplaced block or a wrong scale
// errs by a whole block's share of the dot (>= 1e-3 * S here).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "hwy/targets.h"
#include "hwy/tests/hwy_gtest.h"
#include "kernel_test_util.h"
#include "lamina/quant/activations.h"
#include "lamina/quant/kernels.h"
#include "lamina/quant/thread_pool.h"

namespace lamina::quant {
namespace {

using ktest::abs_dot;
using ktest::kRelativeTolerance;
using ktest::random_activations;
using ktest::random_weights;
using ktest::Shape;

bool is_float_format(QuantFormat f) {
  return f == QuantFormat::F32 || f == QuantFormat::F16 || f == QuantFormat::BF16;
}

// Row lengths covering one block, odd block counts, several super-blocks
// and a model-sized row; the float formats also get ragged lengths and
// every count of whole vectors left after the last round of sums.
std::vector<size_t> row_lengths(QuantFormat f) {
  if (is_float_format(f)) return {1, 7, 33, 50, 100, 112, 256, 4096};
  if (format_traits(f).block_elems == kQK) return {32, 96, 256, 4096};
  return {256, 768, 4096};
}

std::vector<Shape> shapes(QuantFormat f) {
  std::vector<Shape> out;
  for (size_t n_in : row_lengths(f)) {
    out.push_back({1, n_in, 1});    // a single dot
    out.push_back({37, n_in, 1});   // matvec, odd row count
    out.push_back({19, n_in, 6});   // a small batch: full tile and remainder
  }
  out.push_back({64, 4096, 5});
  out.push_back({9, row_lengths(f)[0], 70});  // more rows than one pass holds
  return out;
}

uint32_t seed_of(QuantFormat f, const Shape& s) {
  return static_cast<uint32_t>(f) * 1000003u + static_cast<uint32_t>(s.n_out * 7919 + s.n_in * 31 + s.n_rows);
}

class KernelMatmul : public hwy::TestWithParamTargetAndT<QuantFormat> {
 protected:
  int64_t target() {
    return std::get<0>(::testing::TestWithParam<std::tuple<int64_t, QuantFormat>>::GetParam());
  }
};

HWY_TARGET_INSTANTIATE_TEST_SUITE_P_T(
    KernelMatmul, ::testing::Values(QuantFormat::F32, QuantFormat::F16, QuantFormat::BF16,
                                    QuantFormat::Q4_0, QuantFormat::Q4_1, QuantFormat::Q5_0,
                                    QuantFormat::Q5_1, QuantFormat::Q8_0, QuantFormat::Q2_K,
                                    QuantFormat::Q3_K, QuantFormat::Q4_K, QuantFormat::Q5_K,
                                    QuantFormat::Q6_K, QuantFormat::IQ4_NL, QuantFormat::IQ4_XS,
                                    QuantFormat::MXFP4));

TEST_P(KernelMatmul, MatchesReferenceWithOneAndTwoThreads) {
  const QuantFormat wfmt = GetParam();
  const QuantFormat afmt = kernel_activation_format(wfmt);
  ThreadPool pool1(1);
  ThreadPool pool2(2);
  for (const Shape& s : shapes(wfmt)) {
    SCOPED_TRACE("n_out " + std::to_string(s.n_out) + " n_in " + std::to_string(s.n_in) +
                 " n_rows " + std::to_string(s.n_rows));
    std::mt19937 rng(seed_of(wfmt, s));
    const std::vector<uint8_t> w = random_weights(wfmt, s.n_out, s.n_in, rng);
    const std::vector<float> x = random_activations(s.n_rows, s.n_in, rng);
    QuantizedActivations qx;
    quantize_activations(afmt, x.data(), s.n_rows, s.n_in, qx);

    std::vector<float> y1(s.n_rows * s.n_out, NAN);
    std::vector<float> y2(s.n_rows * s.n_out, NAN);
    matmul(wfmt, w.data(), s.n_out, s.n_in, qx, y1.data(), pool1);
    matmul(wfmt, w.data(), s.n_out, s.n_in, qx, y2.data(), pool2);
    ASSERT_STREQ(kernel_target_name(), hwy::TargetName(target()));

    const size_t wrow_bytes = row_bytes(wfmt, s.n_in);
    for (size_t r = 0; r < s.n_rows; ++r) {
      for (size_t o = 0; o < s.n_out; ++o) {
        const uint8_t* wrow = w.data() + o * wrow_bytes;
        const double ref = is_float_format(wfmt)
                               ? dot_ref(wfmt, wrow, x.data() + r * s.n_in, s.n_in)
                               : dot_quantized_ref(wfmt, wrow, qx.row_blocks(r), s.n_in);
        const double tol = kRelativeTolerance * abs_dot(wfmt, wrow, afmt, qx.row_blocks(r), s.n_in);
        const float got = y1[r * s.n_out + o];
        ASSERT_LE(std::fabs(got - ref), tol) << "row " << r << " output " << o << ": " << got
                                             << " vs reference " << ref;
        // Thread-count invariance: the same bits with two threads.
        ASSERT_EQ(std::memcmp(&got, &y2[r * s.n_out + o], sizeof(float)), 0)
            << "row " << r << " output " << o << ": " << got << " vs " << y2[r * s.n_out + o];
      }
    }
  }
}

// An output's bits do not depend on which other activation rows share the
// call, nor on the number of threads.
TEST_P(KernelMatmul, BatchInvariant) {
  const QuantFormat wfmt = GetParam();
  const size_t n_out = 23;
  const size_t n_in = row_lengths(wfmt).back();
  const size_t n_rows = 70;
  std::mt19937 rng(seed_of(wfmt, {n_out, n_in, n_rows}) + 1);
  const std::vector<uint8_t> w = random_weights(wfmt, n_out, n_in, rng);
  const std::vector<float> x = random_activations(n_rows, n_in, rng);
  ThreadPool pool1(1);
  ThreadPool pool2(2);

  std::vector<float> all(n_rows * n_out);
  matmul(wfmt, w.data(), n_out, n_in, x.data(), n_rows, all.data(), pool2);

  std::vector<float> one(n_out);
  for (size_t r = 0; r < n_rows; ++r) {
    matvec(wfmt, w.data(), n_out, n_in, x.data() + r * n_in, one.data(), r % 2 == 0 ? pool1 : pool2);
    ASSERT_EQ(std::memcmp(one.data(), all.data() + r * n_out, n_out * sizeof(float)), 0)
        << "row " << r << " alone differs from the batch of " << n_rows;
  }
  // Batches of other sizes and offsets (a remainder tile, a full chunk).
  for (const auto& [first, count] : {std::pair<size_t, size_t>{5, 3}, {1, 9}, {3, 64}}) {
    std::vector<float> part(count * n_out);
    matmul(wfmt, w.data(), n_out, n_in, x.data() + first * n_in, count, part.data(), pool1);
    ASSERT_EQ(std::memcmp(part.data(), all.data() + first * n_out, part.size() * sizeof(float)), 0)
        << "rows " << first << ".." << first + count - 1 << " as a batch of " << count;
  }
}

// Quantizing once and reusing the activations gives what the f32 overload
// gives.
TEST_P(KernelMatmul, QuantizedOverloadMatchesFloatOverload) {
  const QuantFormat wfmt = GetParam();
  const size_t n_out = 17;
  const size_t n_in = row_lengths(wfmt).back();
  const size_t n_rows = 3;
  std::mt19937 rng(seed_of(wfmt, {n_out, n_in, n_rows}) + 2);
  const std::vector<uint8_t> w = random_weights(wfmt, n_out, n_in, rng);
  const std::vector<float> x = random_activations(n_rows, n_in, rng);
  ThreadPool pool(2);
  QuantizedActivations qx;
  quantize_activations(kernel_activation_format(wfmt), x.data(), n_rows, n_in, qx, &pool);
  std::vector<float> a(n_rows * n_out), b(n_rows * n_out);
  matmul(wfmt, w.data(), n_out, n_in, qx, a.data(), pool);
  matmul(wfmt, w.data(), n_out, n_in, x.data(), n_rows, b.data(), pool);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(KernelMatmulArguments, RejectsMismatchedActivations) {
  ThreadPool pool(1);
  const std::vector<float> x(256, 1.0f);
  QuantizedActivations q8_0;
  quantize_activations(QuantFormat::Q8_0, x.data(), 1, 256, q8_0);
  std::vector<uint8_t> w(row_bytes(QuantFormat::Q4_K, 256));
  float y = 0.0f;
  EXPECT_THROW(matmul(QuantFormat::Q4_K, w.data(), 1, 256, q8_0, &y, pool), std::invalid_argument);
  EXPECT_THROW(matmul(QuantFormat::Q4_0, w.data(), 1, 128, q8_0, &y, pool), std::invalid_argument);
  EXPECT_THROW(matmul(QuantFormat::Q4_0, w.data(), 1, 48, x.data(), 1, &y, pool), std::invalid_argument);
  EXPECT_THROW(kernel_activation_format(QuantFormat::Q8_K), std::invalid_argument);
  EXPECT_EQ(kernel_activation_format(QuantFormat::BF16), QuantFormat::F32);
  EXPECT_EQ(kernel_activation_format(QuantFormat::Q5_1), QuantFormat::Q8_1);
  EXPECT_EQ(kernel_activation_format(QuantFormat::IQ4_XS), QuantFormat::Q8_K);
}

}  // namespace
}  // namespace lamina::quant
