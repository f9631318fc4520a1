// The tensor-core matmul (taken for two or more activation rows) against
// the one-row matvec and against itself at other row counts: every output
// bit-identical whichever kernel and tile computed it, so a sequence's
// results do not depend on how many rows share its launch, nor on the tile
// shape (each forced in turn, the split-segment ones included).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "lamina/cudaexec/kernel_check.h"
#include "random_weights.h"
#include "lamina/quant/format.h"
#include "lamina/quant/half.h"
#include "lamina/quant/reference.h"

namespace lamina::cudaexec {
namespace {

using quant::QuantFormat;

constexpr QuantFormat kFormats[] = {
    QuantFormat::Q4_0, QuantFormat::Q4_1, QuantFormat::Q5_0, QuantFormat::Q5_1,   QuantFormat::Q8_0,
    QuantFormat::Q2_K, QuantFormat::Q3_K, QuantFormat::Q4_K, QuantFormat::Q5_K,   QuantFormat::Q6_K,
    QuantFormat::IQ4_NL, QuantFormat::IQ4_XS, QuantFormat::MXFP4,
};

struct Shape {
  uint32_t n_out, n_in, n_rows;
};

// The product of rows [r0, r0 + n) alone.
std::vector<float> rows_alone(QuantFormat format, const std::vector<uint8_t>& w, const Shape& s,
                              const std::vector<float>& x, uint32_t r0, uint32_t n, const float* bias,
                              const float* residual) {
  return check_matmul(format, w.data(), s.n_out, s.n_in, x.data() + size_t{r0} * s.n_in, n, bias,
                      residual != nullptr ? residual + size_t{r0} * s.n_out : nullptr);
}

// check_matmul over all rows at once (tensor cores) against launches of
// `chunk` rows (other tiles, or the matvec for chunk 1: there only for a
// few rows, to keep the test quick); bias and residual optional.
void expect_bit_identical(QuantFormat format, const std::vector<uint8_t>& w, const Shape& s,
                          const std::vector<float>& x, const float* bias, const float* residual, const char* what) {
  const std::vector<float> all =
      check_matmul(format, w.data(), s.n_out, s.n_in, x.data(), s.n_rows, bias, residual, MatmulPath::TensorCores);
  ASSERT_EQ(all.size(), size_t{s.n_out} * s.n_rows);
  int reported = 0;
  for (uint32_t chunk : {1u, 5u, 12u, 40u}) {
    if (chunk >= s.n_rows) continue;
    for (uint32_t r0 = 0; r0 < s.n_rows; r0 += chunk) {
      if (chunk == 1 && r0 > 2 && r0 + 1 != s.n_rows && r0 % 17 != 0) continue;
      const uint32_t nr = std::min(chunk, s.n_rows - r0);
      const std::vector<float> part = rows_alone(format, w, s, x, r0, nr, bias, residual);
      for (uint32_t r = 0; r < nr; ++r) {
        for (uint32_t o = 0; o < s.n_out; ++o) {
          const float got = all[size_t{r0 + r} * s.n_out + o];
          const float want = part[size_t{r} * s.n_out + o];
          if (std::memcmp(&got, &want, sizeof(float)) != 0 && ++reported <= 5) {
            ADD_FAILURE() << test::format_name(format) << " " << what << " n_out=" << s.n_out << " n_in=" << s.n_in
                          << " n_rows=" << s.n_rows << " output (" << r0 + r << ", " << o << "): " << got << " vs "
                          << want << " in launches of " << chunk << " rows";
          }
        }
      }
    }
  }
  EXPECT_EQ(reported, 0) << test::format_name(format) << " " << what << " n_out=" << s.n_out << " n_in=" << s.n_in
                         << " n_rows=" << s.n_rows << ": outputs depend on the launch";
}

class MmaMatmulTest : public ::testing::TestWithParam<QuantFormat> {
 protected:
  QuantFormat format() const { return GetParam(); }
  // Quantized weights and activation rows of shape s.
  std::pair<std::vector<uint8_t>, std::vector<float>> inputs(const Shape& s) {
    std::vector<uint8_t> w = test::quantized_weight_bytes(format(), s.n_out, s.n_in, rng_);
    return {std::move(w), test::random_rows(s.n_rows, s.n_in, rng_)};
  }
  // All rows of s at once on the tensor cores (tile -1: the automatic choice).
  std::vector<float> all_rows(const std::vector<uint8_t>& w, const Shape& s, const std::vector<float>& x,
                              int tile = -1) const {
    return check_matmul(format(), w.data(), s.n_out, s.n_in, x.data(), s.n_rows, nullptr, nullptr,
                        MatmulPath::TensorCores, tile);
  }
  std::mt19937 rng_{4321u + static_cast<uint32_t>(GetParam())};
};

// Row counts within and across tiles; odd output counts (within and across
// 64- and 128-output tiles), one segment, many, and a partial last segment
// (768 + 128 values for the 32-value block formats).
TEST_P(MmaMatmulTest, BitIdenticalAcrossLaunches) {
  const Shape shapes[] = {{7, 256, 64},    {300, 1024, 65},  {4871, 512, 64}, {65, 4352, 200},
                          {96, 2048, 512}, {33, 768, 97},    {257, 512, 33},  {128, 256, 16},
                          {70, 896, 45}};
  for (const Shape& s : shapes) {
    if (s.n_in % quant::format_traits(format()).block_elems != 0) continue;
    const std::vector<uint8_t> w = test::quantized_weight_bytes(format(), s.n_out, s.n_in, rng_);
    const std::vector<float> x = test::random_rows(s.n_rows, s.n_in, rng_);
    expect_bit_identical(format(), w, s, x, nullptr, nullptr, "quantized");
  }
}

TEST_P(MmaMatmulTest, BitIdenticalOnRandomBits) {
  const Shape shapes[] = {{70, 4352, 70}, {129, 256, 64}};
  for (const Shape& s : shapes) {
    if (s.n_in % quant::format_traits(format()).block_elems != 0) continue;
    const std::vector<uint8_t> w = test::random_bit_weight_bytes(format(), s.n_out, s.n_in, rng_);
    const std::vector<float> x = test::random_rows(s.n_rows, s.n_in, rng_);
    expect_bit_identical(format(), w, s, x, nullptr, nullptr, "random-bits");
  }
}

// A row alone through the matvec, and through the tensor cores, equals the
// same row of a many-row tensor-core launch.
TEST_P(MmaMatmulTest, RowAloneMatches) {
  const Shape s{100, 1280, 80};
  const auto [w, x] = inputs(s);
  const std::vector<float> all = all_rows(w, s, x);
  ASSERT_EQ(all.size(), size_t{s.n_out} * s.n_rows);
  for (uint32_t r : {0u, 17u, 79u}) {
    const std::vector<float> one = check_matmul(format(), w.data(), s.n_out, s.n_in, x.data() + size_t{r} * s.n_in, 1);
    EXPECT_EQ(std::memcmp(one.data(), all.data() + size_t{r} * s.n_out, s.n_out * sizeof(float)), 0)
        << test::format_name(format()) << ": row " << r << " of " << s.n_rows << " differs from the row alone";
    const std::vector<float> one_mma = check_matmul(format(), w.data(), s.n_out, s.n_in, x.data() + size_t{r} * s.n_in,
                                                    1, nullptr, nullptr, MatmulPath::TensorCores);
    EXPECT_EQ(std::memcmp(one_mma.data(), all.data() + size_t{r} * s.n_out, s.n_out * sizeof(float)), 0)
        << test::format_name(format()) << ": row " << r << " alone on the tensor cores differs";
  }
}

// Every tile shape, forced, gives the automatic choice's bits: 5 segments
// (a partial group of the split shapes) and rows across their tiles.
TEST_P(MmaMatmulTest, EveryTileBitIdentical) {
  const Shape s{200, 1280, 70};
  const auto [w, x] = inputs(s);
  const std::vector<float> want = all_rows(w, s, x);
  ASSERT_EQ(want.size(), size_t{s.n_out} * s.n_rows);
  for (int tile = 0; tile < kMmaTileShapes; ++tile) {
    const std::vector<float> got = all_rows(w, s, x, tile);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
        << test::format_name(format()) << ": tile shape " << tile << " differs";
  }
}

TEST_P(MmaMatmulTest, BiasAndResidualBitIdentical) {
  const Shape s{300, 512, 70};
  const std::vector<uint8_t> w = test::quantized_weight_bytes(format(), s.n_out, s.n_in, rng_);
  const std::vector<float> x = test::random_rows(s.n_rows, s.n_in, rng_);
  const std::vector<float> bias = test::random_rows(1, s.n_out, rng_);
  const std::vector<float> residual = test::random_rows(s.n_rows, s.n_out, rng_);
  expect_bit_identical(format(), w, s, x, bias.data(), nullptr, "bias");
  expect_bit_identical(format(), w, s, x, nullptr, residual.data(), "residual");
  expect_bit_identical(format(), w, s, x, bias.data(), residual.data(), "bias+residual");
}

INSTANTIATE_TEST_SUITE_P(TensorCoreFormats, MmaMatmulTest, ::testing::ValuesIn(kFormats),
                         [](const ::testing::TestParamInfo<QuantFormat>& info) { return test::format_name(info.param); });

}  // namespace
}  // namespace lamina::cudaexec
