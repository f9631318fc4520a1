// The GPU's absorbed latent attention (DeepSeek V2/V3) on random inputs:
// a prompt chunk and the same rows as decode steps give the same bits, and
// both match a double-precision reference over the same f16 keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lamina/cudaexec/kernel_check.h"
#include "lamina/quant/half.h"

namespace lamina::cudaexec {
namespace {

// Queries are exact f32, keys exact f16 (the reference rounds them too), the
// weights come from ex2.approx (relative error ~2^-22) and the sums are f32
// over at most a few thousand keys: about 1e-6 on outputs of magnitude ~1.
// A wrong mask, span fold, value offset or scale is off by 1e-2 or more.
constexpr double kTolerance = 1e-4;

std::vector<float> reference(const LatentAttentionCheck& c, const std::vector<float>& q,
                             const std::vector<float>& keys) {
  const uint32_t v_at = c.key_dim - c.value_dim;
  std::vector<float> out(std::size_t{c.n_rows} * c.n_head * c.value_dim);
  auto key = [&](uint32_t j, uint32_t d) {
    return double{quant::f16_to_f32(quant::f32_to_f16(keys[std::size_t{j} * c.key_dim + d]))};
  };
  std::vector<double> w;
  for (uint32_t r = 0; r < c.n_rows; ++r) {
    const uint32_t pos = c.past + r;
    for (uint32_t h = 0; h < c.n_head; ++h) {
      const float* qr = &q[(std::size_t{r} * c.n_head + h) * c.key_dim];
      w.assign(pos + 1, 0.0);
      double max_score = -INFINITY;
      for (uint32_t j = 0; j <= pos; ++j) {
        double dot = 0.0;
        for (uint32_t d = 0; d < c.key_dim; ++d) dot += double{qr[d]} * key(j, d);
        w[j] = dot * c.scale;
        max_score = std::max(max_score, w[j]);
      }
      double sum = 0.0;
      for (double& x : w) sum += (x = std::exp(x - max_score));
      for (uint32_t d = 0; d < c.value_dim; ++d) {
        double acc = 0.0;
        for (uint32_t j = 0; j <= pos; ++j) acc += w[j] * key(j, v_at + d);
        out[(std::size_t{r} * c.n_head + h) * c.value_dim + d] = static_cast<float>(acc / sum);
      }
    }
  }
  return out;
}

struct Case {
  const char* name;
  uint32_t n_head, key_dim, value_dim, past, n_rows;
};

class LatentAttention : public ::testing::TestWithParam<Case> {};

TEST_P(LatentAttention, ChunkAndDecodeBitIdenticalAndMatchTheReference) {
  const Case& t = GetParam();
  LatentAttentionCheck c;
  c.n_head = t.n_head;
  c.key_dim = t.key_dim;
  c.value_dim = t.value_dim;
  c.scale = 1.0f / std::sqrt(static_cast<float>(t.key_dim));
  c.past = t.past;
  c.n_rows = t.n_rows;
  std::mt19937 rng(t.past * 131 + t.n_rows * 7 + t.key_dim);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> q(std::size_t{t.n_rows} * t.n_head * t.key_dim), keys(std::size_t{t.past + t.n_rows} * t.key_dim);
  for (float& x : q) x = normal(rng);
  for (float& x : keys) x = normal(rng);

  const std::vector<float> want = reference(c, q, keys);
  const std::vector<float> chunk = check_latent_attention(c, q.data(), keys.data(), false);
  ASSERT_EQ(chunk.size(), want.size());
  double worst = 0.0;
  std::size_t worst_at = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(double{chunk[i]} - want[i]);
    if (!(err <= worst)) {  // NaN counts as worst
      worst = std::isnan(err) ? INFINITY : err;
      worst_at = i;
    }
  }
  EXPECT_LE(worst, kTolerance) << "output " << worst_at << ": " << chunk[worst_at] << " vs " << want[worst_at];
  const std::vector<float> decode = check_latent_attention(c, q.data(), keys.data(), true);
  ASSERT_EQ(decode.size(), chunk.size());
  std::size_t differ = 0, first = 0;
  for (std::size_t i = 0; i < decode.size(); ++i)
    if (std::memcmp(&decode[i], &chunk[i], sizeof(float)) != 0 && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << differ << " outputs differ between decode and chunk, first " << first << ": "
                        << decode[first] << " vs " << chunk[first];
}

// DeepSeek-V2-Lite (16 heads) and V3 (128 heads: eight head groups) with
// kv_lora 512 + rope 64, and the test model's 4 heads of 128 + 32; prompts
// from 0, inside the first span and several spans in; one row, part of a
// chunk and many rows.
INSTANTIATE_TEST_SUITE_P(Shapes, LatentAttention,
                         ::testing::Values(Case{"lite_p0_r64", 16, 576, 512, 0, 64},
                                           Case{"lite_p700_r90", 16, 576, 512, 700, 90},
                                           Case{"lite_p1000_r1", 16, 576, 512, 1000, 1},
                                           Case{"v3_p300_r20", 128, 576, 512, 300, 20},
                                           Case{"tiny_p0_r7", 4, 160, 128, 0, 7},
                                           Case{"tiny_p250_r300", 4, 160, 128, 250, 300}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace lamina::cudaexec
