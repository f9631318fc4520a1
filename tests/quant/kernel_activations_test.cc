// SIMD activation quantization, on every compiled Highway target this CPU
// supports: byte-exact with quantize_row_ref, and the kernels' unpacked
// layout consistent with the blocks.
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
#include "lamina/quant/half.h"
#include "lamina/quant/kernels.h"
#include "lamina/quant/reference.h"
#include "lamina/quant/thread_pool.h"

namespace lamina::quant {
namespace {

class KernelActivations : public hwy::TestWithParamTargetAndT<QuantFormat> {
 protected:
  int64_t target() {
    return std::get<0>(::testing::TestWithParam<std::tuple<int64_t, QuantFormat>>::GetParam());
  }
};

HWY_TARGET_INSTANTIATE_TEST_SUITE_P_T(KernelActivations,
                                      ::testing::Values(QuantFormat::Q8_0, QuantFormat::Q8_1,
                                                        QuantFormat::Q8_K));

// Rows that exercise the rounding rules: random values, outliers, exact
// halfway products (for Q8_0/Q8_1 the largest value 127 gives id = 1, for
// Q8_K a largest value of -127 gives iscale = 1), ties in magnitude, zeros,
// tiny values.
std::vector<float> tricky_rows(size_t n_rows, size_t n, std::mt19937& rng) {
  std::vector<float> x = ktest::random_activations(n_rows, n, rng);
  std::uniform_int_distribution<int> k(-126, 125);
  for (size_t r = 0; r < n_rows; ++r) {
    float* row = x.data() + r * n;
    switch (r % 6) {
      case 0: break;  // normal values with outliers
      case 1:          // halfway cases, away from zero (Q8_0/Q8_1)
        for (size_t i = 0; i < n; ++i) row[i] = static_cast<float>(k(rng)) + 0.5f;
        for (size_t i = 0; i < n; i += 32) row[i] = 127.0f;
        break;
      case 2:  // halfway cases, to even (Q8_K)
        for (size_t i = 0; i < n; ++i) row[i] = static_cast<float>(k(rng)) + 0.5f;
        for (size_t i = 0; i < n; i += 256) row[i] = -127.0f;
        break;
      case 3:  // the largest magnitude twice with both signs: the first wins
        for (size_t i = 0; i < n; i += 32) {
          row[i + 3] = 9.0f;
          row[i + 17] = -9.0f;
        }
        break;
      case 4:  // a zero block among tiny values
        for (size_t i = 0; i < n; ++i) row[i] *= 1e-30f;
        std::fill(row, row + 32, 0.0f);
        break;
      case 5: std::fill(row, row + n, 0.0f); break;
    }
  }
  return x;
}

TEST_P(KernelActivations, BlocksMatchReferenceBytes) {
  const QuantFormat format = GetParam();
  ThreadPool pool(2);
  for (const size_t n : {size_t{256}, size_t{512}, size_t{4096}}) {
    const size_t n_rows = 13;
    std::mt19937 rng(static_cast<uint32_t>(n) * 17 + static_cast<uint32_t>(format));
    const std::vector<float> x = tricky_rows(n_rows, n, rng);
    QuantizedActivations q;
    quantize_activations(format, x.data(), n_rows, n, q, n % 512 == 0 ? &pool : nullptr);
    ASSERT_STREQ(kernel_target_name(), hwy::TargetName(target()));
    ASSERT_EQ(q.rows(), n_rows);
    ASSERT_EQ(q.cols(), n);
    const size_t bytes = row_bytes(format, n);
    std::vector<uint8_t> ref(bytes);
    for (size_t r = 0; r < n_rows; ++r) {
      quantize_row_ref(format, x.data() + r * n, ref.data(), n);
      ASSERT_EQ(std::memcmp(q.row_blocks(r), ref.data(), bytes), 0)
          << "n " << n << " row " << r << " (pattern " << r % 6 << ")";
    }
  }
}

// Blocks loaded from elsewhere are unpacked into the same kernel layout as
// quantized ones: a matmul gives the same bits.
TEST_P(KernelActivations, LoadedBlocksMatchQuantized) {
  const QuantFormat format = GetParam();
  const QuantFormat weights = format == QuantFormat::Q8_0   ? QuantFormat::Q4_0
                              : format == QuantFormat::Q8_1 ? QuantFormat::Q5_1
                                                            : QuantFormat::Q4_K;
  ASSERT_EQ(kernel_activation_format(weights), format);
  const size_t n = 1280;  // 40 blocks of 32: a partial group of 4 at the end
  const size_t n_rows = 6;
  const size_t n_out = 9;
  std::mt19937 rng(99);
  const std::vector<float> x = tricky_rows(n_rows, n, rng);
  const std::vector<uint8_t> w = ktest::random_weights(weights, n_out, n, rng);
  const size_t bytes = row_bytes(format, n);
  std::vector<uint8_t> blocks(n_rows * bytes);
  for (size_t r = 0; r < n_rows; ++r) quantize_row_ref(format, x.data() + r * n, blocks.data() + r * bytes, n);

  QuantizedActivations quantized, loaded;
  quantize_activations(format, x.data(), n_rows, n, quantized);
  load_activation_blocks(format, blocks.data(), n_rows, n, loaded);
  for (size_t r = 0; r < n_rows; ++r) {
    ASSERT_EQ(std::memcmp(loaded.row_blocks(r), blocks.data() + r * bytes, bytes), 0);
  }
  ThreadPool pool(1);
  std::vector<float> y_quantized(n_rows * n_out), y_loaded(n_rows * n_out);
  matmul(weights, w.data(), n_out, n, quantized, y_quantized.data(), pool);
  matmul(weights, w.data(), n_out, n, loaded, y_loaded.data(), pool);
  EXPECT_EQ(std::memcmp(y_quantized.data(), y_loaded.data(), y_loaded.size() * sizeof(float)), 0);
}

TEST(KernelActivationsArguments, F32RowsAreCopied) {
  const std::vector<float> x = {1.0f, -2.5f, 3.25f, 0.0f, 7.0f, 8.0f};
  QuantizedActivations q;
  quantize_activations(QuantFormat::F32, x.data(), 2, 3, q);
  EXPECT_EQ(q.format(), QuantFormat::F32);
  EXPECT_EQ(std::memcmp(q.row_blocks(1), x.data() + 3, 3 * sizeof(float)), 0);
}

TEST(KernelActivationsArguments, RejectsBadFormatOrShape) {
  const std::vector<float> x(512, 1.0f);
  QuantizedActivations q;
  EXPECT_THROW(quantize_activations(QuantFormat::Q4_0, x.data(), 1, 512, q), std::invalid_argument);
  EXPECT_THROW(quantize_activations(QuantFormat::Q8_K, x.data(), 1, 288, q), std::invalid_argument);
  EXPECT_THROW(quantize_activations(QuantFormat::Q8_0, x.data(), 1, 40, q), std::invalid_argument);
}

// Reusing an object for a larger shape reallocates; for a smaller one it
// keeps the storage; the contents are right either way.
TEST(KernelActivationsArguments, ReshapesAcrossCalls) {
  std::mt19937 rng(5);
  const std::vector<float> big = ktest::random_activations(8, 1024, rng);
  QuantizedActivations q;
  std::vector<uint8_t> ref(row_bytes(QuantFormat::Q8_0, 1024));
  for (const size_t rows : {size_t{1}, size_t{8}, size_t{2}}) {
    quantize_activations(QuantFormat::Q8_0, big.data(), rows, 1024, q);
    quantize_row_ref(QuantFormat::Q8_0, big.data() + (rows - 1) * 1024, ref.data(), 1024);
    EXPECT_EQ(std::memcmp(q.row_blocks(rows - 1), ref.data(), ref.size()), 0);
  }
}

}  // namespace
}  // namespace lamina::quant
