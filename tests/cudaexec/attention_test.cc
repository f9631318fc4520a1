// The GPU attention on random inputs: every way of launching it (per span
// with the combine pass, per tile with the spans folded in the block, and
// row by row as decode steps) gives the same bits, and all of them match a
// double-precision reference over the same f16 keys and values.
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

// The kernel carries queries and weights in about 22 bits (two f16 parts),
// keys and values exactly (the reference rounds them to f16 too), and sums
// in f32 over at most a few thousand keys: its error is around 1e-6 on
// outputs of magnitude ~1. A wrong mask, span fold or scale is off by 1e-2
// or more.
constexpr double kTolerance = 1e-4;

std::vector<float> reference(const AttentionCheck& c, const std::vector<float>& q, const std::vector<float>& k,
                             const std::vector<float>& v) {
  const uint32_t group = c.n_head / c.n_head_kv, kv_width = c.n_head_kv * c.head_dim;
  std::vector<float> out(std::size_t{c.n_rows} * c.n_head * c.head_dim);
  std::vector<double> w;
  for (uint32_t r = 0; r < c.n_rows; ++r) {
    const uint32_t pos = c.past + r;
    const uint32_t lo = c.window > 0 && pos + 1 > c.window ? pos + 1 - c.window : 0;
    for (uint32_t h = 0; h < c.n_head; ++h) {
      const float* qr = &q[(std::size_t{r} * c.n_head + h) * c.head_dim];
      const uint32_t kvh = h / group;
      w.assign(pos + 1 - lo, 0.0);
      double max_score = c.sinks ? double{c.sinks[h]} : -INFINITY;
      for (uint32_t j = lo; j <= pos; ++j) {
        double dot = 0.0;
        for (uint32_t d = 0; d < c.head_dim; ++d)
          dot += double{qr[d]} * quant::f16_to_f32(quant::f32_to_f16(k[std::size_t{j} * kv_width + kvh * c.head_dim + d]));
        double score = dot * c.scale;
        if (c.softcap > 0.0f) score = c.softcap * std::tanh(score / c.softcap);
        w[j - lo] = score;
        max_score = std::max(max_score, score);
      }
      double sum = c.sinks ? std::exp(c.sinks[h] - max_score) : 0.0;
      for (double& x : w) sum += (x = std::exp(x - max_score));
      for (uint32_t d = 0; d < c.head_dim; ++d) {
        double acc = 0.0;
        for (uint32_t j = lo; j <= pos; ++j)
          acc += w[j - lo] * quant::f16_to_f32(quant::f32_to_f16(v[std::size_t{j} * kv_width + kvh * c.head_dim + d]));
        out[(std::size_t{r} * c.n_head + h) * c.head_dim + d] = static_cast<float>(acc / sum);
      }
    }
  }
  return out;
}

struct Case {
  const char* name;
  uint32_t n_head, n_head_kv, head_dim;
  float softcap;
  uint32_t window;
  uint32_t past, n_rows;
  float q_scale;  // larger queries make the soft cap bite
  float sink_scale = 0.0f;  // > 0: attention sinks of about this size (some above every score)
};

class AttentionSplits : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionSplits, BitIdenticalAndMatchTheReference) {
  const Case& t = GetParam();
  AttentionCheck c;
  c.n_head = t.n_head;
  c.n_head_kv = t.n_head_kv;
  c.head_dim = t.head_dim;
  c.scale = 1.0f / std::sqrt(static_cast<float>(t.head_dim));
  c.softcap = t.softcap;
  c.window = t.window;
  c.past = t.past;
  c.n_rows = t.n_rows;
  std::mt19937 rng(t.past * 131 + t.n_rows * 7 + t.head_dim);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::size_t n_ctx = t.past + t.n_rows;
  std::vector<float> q(std::size_t{t.n_rows} * t.n_head * t.head_dim), k(n_ctx * t.n_head_kv * t.head_dim),
      v(k.size());
  for (float& x : q) x = normal(rng) * t.q_scale;
  for (float& x : k) x = normal(rng);
  for (float& x : v) x = normal(rng);
  std::vector<float> sinks(t.n_head);
  for (float& x : sinks) x = normal(rng) * t.sink_scale;
  if (t.sink_scale > 0.0f) c.sinks = sinks.data();

  const std::vector<float> want = reference(c, q, k, v);
  const std::vector<float> per_span = check_attention(c, q.data(), k.data(), v.data(), AttentionSplit::PerSpan);
  ASSERT_EQ(per_span.size(), want.size());
  double worst = 0.0;
  std::size_t worst_at = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(double{per_span[i]} - want[i]);
    if (!(err <= worst)) {  // NaN counts as worst
      worst = std::isnan(err) ? INFINITY : err;
      worst_at = i;
    }
  }
  EXPECT_LE(worst, kTolerance) << "per span, output " << worst_at << ": " << per_span[worst_at] << " vs "
                               << want[worst_at];
  for (AttentionSplit split : {AttentionSplit::PerTile, AttentionSplit::Decode, AttentionSplit::Auto}) {
    const std::vector<float> got = check_attention(c, q.data(), k.data(), v.data(), split);
    if (got.empty()) {
      EXPECT_EQ(split, AttentionSplit::PerTile) << "only per tile may be unsupported";
      continue;
    }
    ASSERT_EQ(got.size(), per_span.size());
    std::size_t differ = 0, first = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::memcmp(&got[i], &per_span[i], sizeof(float)) != 0 && differ++ == 0) first = i;
    }
    EXPECT_EQ(differ, 0u) << "split " << static_cast<int>(split) << ": " << differ << " outputs differ from per span, first "
                          << first << ": " << got[first] << " vs " << per_span[first];
  }
}

// Head shapes of real models (Llama 3 8B, Qwen2 0.5B, Gemma 2 with its soft
// cap and window, a head width that is not a multiple of 16, full MHA,
// gpt-oss's sinks with and without its window);
// prompts that start at 0, inside the first span and several spans in, and
// row counts of one token, part of a tile and several tiles.
INSTANTIATE_TEST_SUITE_P(Shapes, AttentionSplits,
                         ::testing::Values(Case{"gqa4_d128_p0_r64", 32, 8, 128, 0.0f, 0, 0, 64, 1.0f},
                                           Case{"gqa4_d128_p700_r200", 32, 8, 128, 0.0f, 0, 700, 200, 1.0f},
                                           Case{"gqa4_d128_p1000_r1", 32, 8, 128, 0.0f, 0, 1000, 1, 1.0f},
                                           Case{"gqa7_d64_p300_r513", 14, 2, 64, 0.0f, 0, 300, 513, 1.0f},
                                           Case{"gqa7_d64_p0_r7", 14, 2, 64, 0.0f, 0, 0, 7, 1.0f},
                                           Case{"gqa2_d256_cap_window", 8, 4, 256, 30.0f, 300, 500, 150, 4.0f},
                                           Case{"gqa2_d128_cap_window", 8, 4, 128, 30.0f, 300, 500, 150, 4.0f},
                                           Case{"gqa3_d80_p260_r90", 6, 2, 80, 0.0f, 0, 260, 90, 1.0f},
                                           Case{"mha_d64_p511_r66", 4, 4, 64, 0.0f, 0, 511, 66, 1.0f},
                                           Case{"gqa8_d64_sinks_window", 64, 8, 64, 0.0f, 128, 300, 160, 1.0f, 3.0f},
                                           Case{"gqa8_d64_sinks_p600_r130", 64, 8, 64, 0.0f, 0, 600, 130, 1.0f, 3.0f},
                                           Case{"gqa8_d64_sinks_p0_r1", 64, 8, 64, 0.0f, 0, 0, 1, 1.0f, 8.0f}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace lamina::cudaexec
