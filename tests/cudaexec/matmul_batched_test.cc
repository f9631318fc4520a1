// Batched products (several matrices of a stack, each with its own
// activation rows, in one launch: latent attention's per-head products) and
// grouped ones (each matrix on its own run of rows: a mixture's experts)
// give each matrix the bits of its own matmul, through the one-row matvec
// and the tensor-core kernel alike.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lamina/cudaexec/kernel_check.h"
#include "random_weights.h"

namespace lamina::cudaexec {
namespace {

using quant::QuantFormat;

struct Case {
  QuantFormat format;
  uint32_t n_in;
};

class MatmulBatched : public ::testing::TestWithParam<Case> {};

TEST_P(MatmulBatched, EachMatrixAsItsOwnProduct) {
  const auto [format, n_in] = GetParam();
  constexpr uint32_t kBatch = 5, kOut = 72;
  std::mt19937 rng(static_cast<uint32_t>(format) * 31 + n_in);
  const std::vector<uint8_t> w = test::quantized_weight_bytes(format, kBatch * kOut, n_in, rng);
  const std::size_t matrix_bytes = quant::row_bytes(format, n_in) * kOut;
  for (uint32_t n_rows : {1u, 37u}) {
    const std::vector<float> x = test::random_rows(n_rows * kBatch, n_in, rng);
    const std::vector<float> got = check_matmul_batched(format, w.data(), kBatch, kOut, n_in, x.data(), n_rows);
    ASSERT_EQ(got.size(), std::size_t{n_rows} * kBatch * kOut);
    for (uint32_t b = 0; b < kBatch; ++b) {
      std::vector<float> xb(std::size_t{n_rows} * n_in);
      for (uint32_t t = 0; t < n_rows; ++t)
        std::memcpy(&xb[std::size_t{t} * n_in], &x[(std::size_t{t} * kBatch + b) * n_in], n_in * sizeof(float));
      const std::vector<float> want = check_matmul(format, w.data() + b * matrix_bytes, kOut, n_in, xb.data(), n_rows);
      std::size_t differ = 0;
      for (uint32_t t = 0; t < n_rows; ++t)
        for (uint32_t o = 0; o < kOut; ++o)
          differ += std::memcmp(&got[(std::size_t{t} * kBatch + b) * kOut + o], &want[std::size_t{t} * kOut + o],
                                sizeof(float)) != 0;
      EXPECT_EQ(differ, 0u) << test::format_name(format) << " matrix " << b << ", " << n_rows << " rows";
    }
  }
}

TEST_P(MatmulBatched, GroupedAsExpertsEachAsItsOwnProduct) {
  const auto [format, n_in] = GetParam();
  constexpr uint32_t kOut = 72;
  std::mt19937 rng(static_cast<uint32_t>(format) * 17 + n_in);
  // Experts with no rows, one row and many, as routing leaves them.
  for (const std::vector<uint32_t>& first :
       {std::vector<uint32_t>{0, 0, 1, 1, 1}, std::vector<uint32_t>{0, 3, 3, 40, 41, 41, 90}}) {
    const auto n_batch = static_cast<uint32_t>(first.size() - 1);
    const std::vector<uint8_t> w = test::quantized_weight_bytes(format, n_batch * kOut, n_in, rng);
    const std::size_t matrix_bytes = quant::row_bytes(format, n_in) * kOut;
    const std::vector<float> x = test::random_rows(first.back(), n_in, rng);
    const std::vector<float> got = check_matmul_grouped(format, w.data(), kOut, n_in, x.data(), first);
    ASSERT_EQ(got.size(), std::size_t{first.back()} * kOut);
    for (uint32_t b = 0; b < n_batch; ++b) {
      const uint32_t rows = first[b + 1] - first[b];
      if (rows == 0) continue;
      const std::vector<float> want = check_matmul(format, w.data() + b * matrix_bytes, kOut, n_in,
                                                   x.data() + std::size_t{first[b]} * n_in, rows);
      EXPECT_EQ(std::memcmp(got.data() + std::size_t{first[b]} * kOut, want.data(), want.size() * sizeof(float)), 0)
          << test::format_name(format) << " expert " << b << " of " << n_batch << ", " << rows << " rows";
    }
  }
}

// The float formats, a 32-block and a super-block family, and the formats
// DeepSeek files use for attn_k_b / attn_v_b.
INSTANTIATE_TEST_SUITE_P(Formats, MatmulBatched,
                         ::testing::Values(Case{QuantFormat::F32, 64}, Case{QuantFormat::F16, 128},
                                           Case{QuantFormat::Q8_0, 128}, Case{QuantFormat::Q5_0, 64},
                                           Case{QuantFormat::Q4_K, 512}, Case{QuantFormat::Q6_K, 256},
                                           Case{QuantFormat::MXFP4, 128}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return test::format_name(info.param.format);
                         });

}  // namespace
}  // namespace lamina::cudaexec
