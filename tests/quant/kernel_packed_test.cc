// The packed weight layout (lamina/quant/packed.h), on every compiled Highway
// target this CPU supports: against the scalar reference dots of the rows
// before packing (the tolerance of kernel_matmul_test.cc, for the same
// reasons), bit for bit against the scalar kernel of the packed layout, with
// 1 and 2 threads, and invariant to the batch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "hwy/targets.h"
#include "hwy/tests/hwy_gtest.h"
#include "kernel_test_util.h"
#include "lamina/quant/blocks.h"
#include "lamina/quant/kernels.h"
#include "lamina/quant/packed.h"
#include "lamina/quant/reference.h"
#include "packed_layout.h"

namespace lamina::quant {
namespace {

using ktest::abs_dot;
using ktest::kRelativeTolerance;
using ktest::random_activations;
using ktest::random_weights;
using ktest::Shape;

class KernelPacked : public hwy::TestWithParamTargetAndT<QuantFormat> {
 protected:
  int64_t target() {
    return std::get<0>(::testing::TestWithParam<std::tuple<int64_t, QuantFormat>>::GetParam());
  }
};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P_T(KernelPacked, ::testing::Values(QuantFormat::Q2_K, QuantFormat::Q3_K, QuantFormat::Q4_0,
                                                                      QuantFormat::Q8_0,
                                                                      QuantFormat::Q4_K, QuantFormat::Q5_K,
                                                                      QuantFormat::IQ4_XS));

// The scalar kernel of the packed layout, for every output of every row.
std::vector<float> scalar_matmul(const PackedWeights& p, const QuantizedActivations& x) {
  std::vector<float> y(x.rows() * p.n_out(), NAN);
  const detail::PackedView view{p.format(), p.data(), p.n_out(), p.n_in()};
  for (size_t r = 0; r < x.rows(); ++r) {
    for (size_t g = 0; g < view.groups(); ++g) {
      detail::dot_packed_group_scalar(view, g, detail::ActivationsAccess::row(x, r), y.data() + r * p.n_out());
    }
  }
  return y;
}

TEST_P(KernelPacked, MatchesReferenceAndScalarKernel) {
  const QuantFormat wfmt = GetParam();
  const QuantFormat afmt = kernel_activation_format(wfmt);
  ThreadPool pool1(1);
  ThreadPool pool2(2);
  // Row counts below, at and past one group of 16, batches with every tile
  // remainder, and more rows than a tile.
  std::vector<Shape> shapes{{1, 256, 1},  {15, 768, 1},  {16, 256, 3},   {37, 4096, 1}, {33, 512, 6},
                            {64, 4096, 5}, {17, 256, 70}, {200, 1024, 2}, {5, 4352, 1}};
  if (format_traits(wfmt).block_elems == kQK) {
    // Block counts that leave a partial group of 4 activation blocks.
    shapes.insert(shapes.end(), {{7, 32, 2}, {19, 96, 5}, {16, 160, 1}});
  }
  for (const Shape& s : shapes) {
    SCOPED_TRACE("n_out " + std::to_string(s.n_out) + " n_in " + std::to_string(s.n_in) + " n_rows " +
                 std::to_string(s.n_rows));
    std::mt19937 rng(static_cast<uint32_t>(s.n_out * 7919 + s.n_in * 31 + s.n_rows) + static_cast<uint32_t>(wfmt));
    const std::vector<uint8_t> w = random_weights(wfmt, s.n_out, s.n_in, rng);
    const std::vector<float> x = random_activations(s.n_rows, s.n_in, rng);
    QuantizedActivations qx;
    quantize_activations(afmt, x.data(), s.n_rows, s.n_in, qx);
    const PackedWeights p = pack_weights(wfmt, w.data(), s.n_out, s.n_in);
    // The rows of whole groups, plus per 16 rows of a super-block 64 bytes
    // (Q3_K, Q4_K, Q5_K) or 32 (IQ4_XS) of scales stored as bytes.
    const size_t padded_rows = (s.n_out + 15) / 16 * 16;
    const size_t extra = wfmt == QuantFormat::Q3_K || wfmt == QuantFormat::Q4_K || wfmt == QuantFormat::Q5_K ? 64
                         : wfmt == QuantFormat::IQ4_XS                          ? 32
                                                                                 : 0;
    ASSERT_EQ(p.bytes(), padded_rows * row_bytes(wfmt, s.n_in) + padded_rows / 16 * s.n_in / kQK_K * extra);

    std::vector<float> y1(s.n_rows * s.n_out, NAN);
    std::vector<float> y2(s.n_rows * s.n_out, NAN);
    matmul(p, qx, y1.data(), pool1);
    matmul(p, qx, y2.data(), pool2);
    const std::vector<float> scalar = scalar_matmul(p, qx);
    ASSERT_STREQ(kernel_target_name(), hwy::TargetName(target()));

    const size_t wrow_bytes = row_bytes(wfmt, s.n_in);
    for (size_t r = 0; r < s.n_rows; ++r) {
      for (size_t o = 0; o < s.n_out; ++o) {
        const uint8_t* wrow = w.data() + o * wrow_bytes;
        const double ref = dot_quantized_ref(wfmt, wrow, qx.row_blocks(r), s.n_in);
        const double tol = kRelativeTolerance * abs_dot(wfmt, wrow, afmt, qx.row_blocks(r), s.n_in);
        const size_t i = r * s.n_out + o;
        ASSERT_LE(std::fabs(y1[i] - ref), tol) << "row " << r << " output " << o << ": " << y1[i]
                                               << " vs reference " << ref;
        ASSERT_EQ(std::memcmp(&y1[i], &scalar[i], sizeof(float)), 0)
            << "row " << r << " output " << o << ": " << y1[i] << " vs scalar kernel " << scalar[i];
        ASSERT_EQ(std::memcmp(&y1[i], &y2[i], sizeof(float)), 0)
            << "row " << r << " output " << o << ": " << y1[i] << " vs " << y2[i] << " with 2 threads";
      }
    }
  }
}

TEST_P(KernelPacked, BatchInvariant) {
  const QuantFormat wfmt = GetParam();
  const QuantFormat afmt = kernel_activation_format(wfmt);
  const size_t n_out = 45;
  const size_t n_in = 2048;
  const size_t n_rows = 11;
  std::mt19937 rng(99);
  const std::vector<uint8_t> w = random_weights(wfmt, n_out, n_in, rng);
  const std::vector<float> x = random_activations(n_rows, n_in, rng);
  const PackedWeights p = pack_weights(wfmt, w.data(), n_out, n_in);
  ThreadPool pool(2);
  QuantizedActivations all;
  quantize_activations(afmt, x.data(), n_rows, n_in, all);
  std::vector<float> y_all(n_rows * n_out);
  matmul(p, all, y_all.data(), pool);
  for (const auto& [first, count] : {std::pair<size_t, size_t>{0, 1}, {4, 1}, {2, 3}, {5, 6}}) {
    QuantizedActivations part;
    quantize_activations(afmt, x.data() + first * n_in, count, n_in, part);
    std::vector<float> y(count * n_out);
    matmul(p, part, y.data(), pool);
    ASSERT_EQ(std::memcmp(y.data(), y_all.data() + first * n_out, y.size() * sizeof(float)), 0)
        << "rows " << first << ".." << first + count - 1 << " as a batch of " << count;
  }
}

// matmul_as_packed: the file's rows with the packed kernels' arithmetic, bit
// for bit against matmul(PackedWeights) and the scalar form, with 1 and 2
// threads, for partial groups and every tile remainder; formats without it
// are rejected.
TEST_P(KernelPacked, FileLayoutWithPackedArithmeticMatchesPacked) {
  const QuantFormat wfmt = GetParam();
  const QuantFormat afmt = kernel_activation_format(wfmt);
  ThreadPool pool1(1);
  ThreadPool pool2(2);
  std::mt19937 rng(static_cast<uint32_t>(wfmt) + 17);
  if (!has_packed_arithmetic_on_file_layout(wfmt)) {
    const size_t n_in = 256;
    const std::vector<uint8_t> w = random_weights(wfmt, 2, n_in, rng);
    QuantizedActivations qx;
    const std::vector<float> x = random_activations(1, n_in, rng);
    quantize_activations(afmt, x.data(), 1, n_in, qx);
    std::vector<float> y(2);
    EXPECT_THROW(matmul_as_packed(wfmt, w.data(), 2, n_in, qx, y.data(), pool1), std::invalid_argument);
    return;
  }
  for (const Shape& s : std::vector<Shape>{{1, 256, 1}, {15, 768, 1}, {16, 256, 3}, {37, 4096, 1}, {33, 512, 6},
                                           {64, 4096, 5}, {17, 256, 70}, {200, 1024, 2}, {5, 4352, 1}}) {
    SCOPED_TRACE("n_out " + std::to_string(s.n_out) + " n_in " + std::to_string(s.n_in) + " n_rows " +
                 std::to_string(s.n_rows));
    const std::vector<uint8_t> w = random_weights(wfmt, s.n_out, s.n_in, rng);
    const std::vector<float> x = random_activations(s.n_rows, s.n_in, rng);
    QuantizedActivations qx;
    quantize_activations(afmt, x.data(), s.n_rows, s.n_in, qx);
    std::vector<float> packed(s.n_rows * s.n_out, NAN);
    matmul(pack_weights(wfmt, w.data(), s.n_out, s.n_in), qx, packed.data(), pool2);
    std::vector<float> y1(s.n_rows * s.n_out, NAN);
    std::vector<float> y2(s.n_rows * s.n_out, NAN);
    std::vector<float> scalar(s.n_rows * s.n_out, NAN);
    matmul_as_packed(wfmt, w.data(), s.n_out, s.n_in, qx, y1.data(), pool1);
    matmul_as_packed(wfmt, w.data(), s.n_out, s.n_in, qx, y2.data(), pool2);
    detail::matmul_as_packed_scalar(wfmt, w.data(), s.n_out, s.n_in, qx, scalar.data(), 0, s.n_out);
    ASSERT_STREQ(kernel_target_name(), hwy::TargetName(target()));
    for (size_t i = 0; i < packed.size(); ++i) {
      ASSERT_EQ(std::memcmp(&y1[i], &packed[i], sizeof(float)), 0)
          << "row " << i / s.n_out << " output " << i % s.n_out << ": " << y1[i] << " vs packed " << packed[i];
      ASSERT_EQ(std::memcmp(&y2[i], &packed[i], sizeof(float)), 0) << "2 threads, output " << i;
      ASSERT_EQ(std::memcmp(&scalar[i], &packed[i], sizeof(float)), 0) << "scalar form, output " << i;
    }
  }
  std::vector<float> y(1);
  QuantizedActivations wrong;
  const std::vector<float> x = random_activations(1, 512, rng);
  quantize_activations(afmt, x.data(), 1, 512, wrong);
  const std::vector<uint8_t> w = random_weights(wfmt, 1, 256, rng);
  EXPECT_THROW(matmul_as_packed(wfmt, w.data(), 1, 256, wrong, y.data(), pool1), std::invalid_argument);
}

TEST_P(KernelPacked, FasterOnlyWithASimdKernel) {
  const bool simd = target() == HWY_AVX3_DL && __builtin_cpu_supports("gfni");
  EXPECT_EQ(packed_layout_is_faster(GetParam()), simd);
  EXPECT_FALSE(packed_layout_is_faster(QuantFormat::Q6_K));
}

// pack_weights (the fast packers where a format has one) gives the bytes of
// the reference packers, on random bytes (every bit of every field moves,
// NaN and infinite factors included) and on quantized rows, for whole and
// partial groups, with and without a pool.
TEST(KernelPackedLayout, FastPackersMatchReference) {
  ThreadPool pool(2);
  for (const QuantFormat f : {QuantFormat::Q2_K, QuantFormat::Q3_K, QuantFormat::Q4_0, QuantFormat::Q8_0,
                              QuantFormat::Q4_K, QuantFormat::Q5_K, QuantFormat::IQ4_XS}) {
    const size_t block = format_traits(f).block_elems;
    for (const auto& [n_out, blocks] : {std::pair<size_t, size_t>{1, 1}, {16, 3}, {37, 2}, {64, 17}, {5, 1}}) {
      const size_t n_in = blocks * block;
      SCOPED_TRACE(std::string(format_traits(f).name) + " n_out " + std::to_string(n_out) + " n_in " +
                   std::to_string(n_in));
      std::mt19937 rng(static_cast<uint32_t>(n_out * 131 + n_in) + static_cast<uint32_t>(f));
      std::vector<uint8_t> random_bytes(n_out * row_bytes(f, n_in));
      for (uint8_t& b : random_bytes) b = static_cast<uint8_t>(rng());
      for (const std::vector<uint8_t>& w : {random_bytes, random_weights(f, n_out, n_in, rng)}) {
        const detail::PackedView view{f, nullptr, n_out, n_in};
        std::vector<uint8_t> ref(view.groups() * view.blocks_per_row() * detail::packed_block_bytes(f), 0xA5);
        detail::pack_matrix(f, w.data(), n_out, n_in, ref.data(), nullptr, /*reference=*/true);
        for (ThreadPool* with : {static_cast<ThreadPool*>(nullptr), &pool}) {
          const PackedWeights p = pack_weights(f, w.data(), n_out, n_in, with);
          ASSERT_EQ(p.bytes(), ref.size());
          ASSERT_EQ(std::memcmp(p.data(), ref.data(), ref.size()), 0);
        }
      }
    }
  }
}

TEST(KernelPackedArguments, RejectsBadInput) {
  std::vector<uint8_t> w(row_bytes(QuantFormat::Q6_K, 256));
  EXPECT_FALSE(has_packed_layout(QuantFormat::Q6_K));
  EXPECT_TRUE(has_packed_layout(QuantFormat::Q2_K));
  EXPECT_TRUE(has_packed_layout(QuantFormat::Q4_0));
  EXPECT_THROW(pack_weights(QuantFormat::Q4_0, w.data(), 1, 48), std::invalid_argument);
  EXPECT_THROW(pack_weights(QuantFormat::Q6_K, w.data(), 1, 256), std::invalid_argument);
  EXPECT_THROW(pack_weights(QuantFormat::Q2_K, w.data(), 1, 0), std::invalid_argument);
  EXPECT_THROW(pack_weights(QuantFormat::Q2_K, w.data(), 1, 128), std::invalid_argument);

  const PackedWeights p = pack_weights(QuantFormat::Q2_K, w.data(), 1, 256);
  ThreadPool pool(1);
  const std::vector<float> x(512, 0.5f);
  QuantizedActivations q8_0, q8_k_long;
  quantize_activations(QuantFormat::Q8_0, x.data(), 1, 256, q8_0);
  quantize_activations(QuantFormat::Q8_K, x.data(), 1, 512, q8_k_long);
  float y = 0.0f;
  EXPECT_THROW(matmul(p, q8_0, &y, pool), std::invalid_argument);
  EXPECT_THROW(matmul(p, q8_k_long, &y, pool), std::invalid_argument);
  EXPECT_THROW(matmul(PackedWeights{}, q8_0, &y, pool), std::invalid_argument);
}

}  // namespace
}  // namespace lamina::quant
