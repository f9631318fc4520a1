// The reference dot products against dot_<type>.gguf: activation
// quantization byte for byte, and both reference dots within the README's
// tolerances (rel-RMSE <= 1e-5).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "lamina/quant/format.h"
#include "lamina/quant/reference.h"
#include "quant_testdata.h"

namespace lamina::quant {
namespace {

using testing::quant_testdata_file;
using testing::relative_rmse;
using testing::tensor_as_f32;
using testing::tensor_row;

constexpr double kDotTolerance = 1e-5;

class ReferenceDot : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto path = quant_testdata_file("dot_" + GetParam() + ".gguf");
    if (path.empty()) GTEST_SKIP() << "no test data in " << testing::quant_testdata_dir();
    file_ = std::make_unique<gguf::GgufFile>(gguf::GgufFile::open(path));
    const auto format = format_from_name(file_->get_string("lamina.testdata.type"));
    ASSERT_TRUE(format.has_value());
    wfmt_ = *format;
    const auto act = format_from_name(file_->get_string("lamina.testdata.activation_type"));
    ASSERT_TRUE(act.has_value());
    ASSERT_EQ(format_traits(wfmt_).activation, *act);
    const auto& w = file_->tensor("w");
    ASSERT_EQ(static_cast<uint32_t>(w.type), static_cast<uint32_t>(wfmt_));
    n_ = w.ne[0];
    w_rows_ = w.ne[1];
    x_ = tensor_as_f32(file_->tensor("x"));
    x_cols_ = file_->tensor("x").ne[1];
    ASSERT_EQ(x_.size(), n_ * x_cols_);
  }

  const std::byte* w_row(size_t r) const {
    return tensor_row(file_->tensor("w"), row_bytes(wfmt_, n_), r).data();
  }
  const float* x_col(size_t c) const { return x_.data() + c * n_; }

  std::unique_ptr<gguf::GgufFile> file_;
  QuantFormat wfmt_ = QuantFormat::F32;
  size_t n_ = 0;
  size_t w_rows_ = 0;
  size_t x_cols_ = 0;
  std::vector<float> x_;
};

TEST_P(ReferenceDot, ActivationQuantizationIsByteExact) {
  const QuantFormat act = format_traits(wfmt_).activation;
  const size_t act_bytes = row_bytes(act, n_);
  const auto& raw = file_->tensor("x_act_raw");
  ASSERT_EQ(raw.ne[0], act_bytes);
  const auto act_deq = tensor_as_f32(file_->tensor("x_act_deq"));
  std::vector<std::byte> q(act_bytes);
  std::vector<float> deq(n_);
  for (size_t c = 0; c < x_cols_; ++c) {
    quantize_row_ref(act, x_col(c), q.data(), n_);
    const auto expected = tensor_row(raw, act_bytes, c);
    EXPECT_EQ(std::memcmp(q.data(), expected.data(), act_bytes), 0) << "column " << c;
    dequantize_row_ref(act, q.data(), deq.data(), n_);
    EXPECT_EQ(std::memcmp(deq.data(), act_deq.data() + c * n_, n_ * sizeof(float)), 0) << "column " << c;
  }
}

TEST_P(ReferenceDot, DotRefMatchesExactProduct) {
  const auto y_ref = tensor_as_f32(file_->tensor("y_ref"));
  std::vector<double> y(w_rows_ * x_cols_);
  for (size_t c = 0; c < x_cols_; ++c) {
    for (size_t r = 0; r < w_rows_; ++r) y[c * w_rows_ + r] = dot_ref(wfmt_, w_row(r), x_col(c), n_);
  }
  EXPECT_LE(relative_rmse(y, y_ref), kDotTolerance);
  // y_ref is an f64 sum rounded to f32; ours rounds to the same float.
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(static_cast<float>(y[i]), y_ref[i]) << i;
}

TEST_P(ReferenceDot, DotQuantizedRefMatchesQuantizedActivationProduct) {
  const QuantFormat act = format_traits(wfmt_).activation;
  const size_t act_bytes = row_bytes(act, n_);
  const auto y_xq_ref = tensor_as_f32(file_->tensor("y_xq_ref"));
  std::vector<std::byte> q(act_bytes);
  std::vector<double> y(w_rows_ * x_cols_);
  for (size_t c = 0; c < x_cols_; ++c) {
    quantize_row_ref(act, x_col(c), q.data(), n_);
    for (size_t r = 0; r < w_rows_; ++r) {
      y[c * w_rows_ + r] = dot_quantized_ref(wfmt_, w_row(r), q.data(), n_);
    }
  }
  EXPECT_LE(relative_rmse(y, y_xq_ref), kDotTolerance);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(static_cast<float>(y[i]), y_xq_ref[i]) << i;
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, ReferenceDot,
                         ::testing::Values("f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k",
                                           "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs"));

}  // namespace
}  // namespace lamina::quant
