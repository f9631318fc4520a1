// The tensor-core matmul (taken for many activation rows) against the matvec
// kernels: every output bit-identical to the same row computed in a launch
// of at most 8 rows (the matvec path, itself bit-identical to a row alone),
// so a sequence's results do not depend on how many rows share its launch.
// The tensor-core kernel is run explicitly, whatever matmul() would pick.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
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
    QuantFormat::Q4_K, QuantFormat::Q5_K, QuantFormat::Q6_K, QuantFormat::IQ4_NL, QuantFormat::IQ4_XS,
};

constexpr uint32_t kMatvecRows = 8;  // launches this small stay on the matvec kernels

struct Shape {
  uint32_t n_out, n_in, n_rows;
};

// check_matmul over all rows at once against launches of kMatvecRows rows;
// bias and residual optional. Returns nothing: failures are reported.
void expect_bit_identical(QuantFormat format, const std::vector<uint8_t>& w, const Shape& s,
                          const std::vector<float>& x, const float* bias, const float* residual, const char* what) {
  const std::vector<float> all =
      check_matmul(format, w.data(), s.n_out, s.n_in, x.data(), s.n_rows, bias, residual, MatmulPath::TensorCores);
  ASSERT_EQ(all.size(), size_t{s.n_out} * s.n_rows);
  int reported = 0;
  for (uint32_t r0 = 0; r0 < s.n_rows; r0 += kMatvecRows) {
    const uint32_t nr = std::min(kMatvecRows, s.n_rows - r0);
    const std::vector<float> part =
        check_matmul(format, w.data(), s.n_out, s.n_in, x.data() + size_t{r0} * s.n_in, nr, bias,
                     residual != nullptr ? residual + size_t{r0} * s.n_out : nullptr);
    for (uint32_t r = 0; r < nr; ++r) {
      for (uint32_t o = 0; o < s.n_out; ++o) {
        const float got = all[size_t{r0 + r} * s.n_out + o];
        const float want = part[size_t{r} * s.n_out + o];
        if (std::memcmp(&got, &want, sizeof(float)) != 0 && ++reported <= 5) {
          ADD_FAILURE() << test::format_name(format) << " " << what << " n_out=" << s.n_out << " n_in=" << s.n_in
                        << " n_rows=" << s.n_rows << " output (" << r0 + r << ", " << o << "): " << got
                        << " vs matvec " << want;
        }
      }
    }
  }
  EXPECT_EQ(reported, 0) << test::format_name(format) << " " << what << " n_out=" << s.n_out << " n_in=" << s.n_in
                         << " n_rows=" << s.n_rows << ": outputs differ from the matvec";
}

class MmaMatmulTest : public ::testing::TestWithParam<QuantFormat> {
 protected:
  QuantFormat format() const { return GetParam(); }
  std::mt19937 rng_{4321u + static_cast<uint32_t>(GetParam())};
};

// Row counts within and across 64-row tiles; odd output counts (within and
// across 128-output tiles), fewer blocks than lanes (lanes without units),
// block counts not a multiple of 32, and many per lane.
TEST_P(MmaMatmulTest, BitIdenticalToMatvec) {
  const Shape shapes[] = {{7, 256, 64},    {300, 1024, 65},  {4871, 512, 64}, {65, 4352, 200},
                          {96, 2048, 512}, {33, 768, 97},    {257, 512, 33},  {128, 256, 16}};
  for (const Shape& s : shapes) {
    const std::vector<uint8_t> w = test::quantized_weight_bytes(format(), s.n_out, s.n_in, rng_);
    const std::vector<float> x = test::random_rows(s.n_rows, s.n_in, rng_);
    expect_bit_identical(format(), w, s, x, nullptr, nullptr, "quantized");
  }
}

TEST_P(MmaMatmulTest, BitIdenticalOnRandomBits) {
  const Shape shapes[] = {{70, 4352, 70}, {129, 256, 64}};
  for (const Shape& s : shapes) {
    const std::vector<uint8_t> w = test::random_bit_weight_bytes(format(), s.n_out, s.n_in, rng_);
    const std::vector<float> x = test::random_rows(s.n_rows, s.n_in, rng_);
    expect_bit_identical(format(), w, s, x, nullptr, nullptr, "random-bits");
  }
}

// A row alone (the decode kernel) equals the same row of a tensor-core launch.
TEST_P(MmaMatmulTest, RowAloneMatches) {
  const Shape s{100, 1280, 80};
  const std::vector<uint8_t> w = test::quantized_weight_bytes(format(), s.n_out, s.n_in, rng_);
  const std::vector<float> x = test::random_rows(s.n_rows, s.n_in, rng_);
  const std::vector<float> all =
      check_matmul(format(), w.data(), s.n_out, s.n_in, x.data(), s.n_rows, nullptr, nullptr, MatmulPath::TensorCores);
  ASSERT_EQ(all.size(), size_t{s.n_out} * s.n_rows);
  for (uint32_t r : {0u, 17u, 79u}) {
    const std::vector<float> one = check_matmul(format(), w.data(), s.n_out, s.n_in, x.data() + size_t{r} * s.n_in, 1);
    EXPECT_EQ(std::memcmp(one.data(), all.data() + size_t{r} * s.n_out, s.n_out * sizeof(float)), 0)
        << test::format_name(format()) << ": row " << r << " of " << s.n_rows << " differs from the row alone";
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
