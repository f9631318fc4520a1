// The CPU attention (tiled, online softmax) against its slow, obvious form in
// double, within a bound derived from f32 rounding; and a query's result bit
// for bit the same whatever batch it comes in, as the forward pass's
// chunking and prefix-cache invariance rely on.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "attention.h"
#include "lamina/quant/thread_pool.h"

namespace lamina::model::cpu {
namespace {

struct Case {
  std::string name;
  uint32_t n_head, n_head_kv, head_dim_k, head_dim_v;
  float softcap;
  uint32_t window;
  KvType type;
  bool sinks = false;  // gpt-oss's per-head sink logits
  bool latent = false;  // deepseek2's layout: V is the head of each K row
};

const Case kCases[] = {
    {"gqa7_f16", 14, 2, 64, 64, 0.0f, 0, KvType::F16},
    {"gqa7_f32", 14, 2, 64, 64, 0.0f, 0, KvType::F32},
    {"mha_ragged_dims", 3, 3, 20, 36, 0.0f, 0, KvType::F16},
    {"softcap_window", 8, 2, 32, 32, 20.0f, 100, KvType::F16},
    {"window_below_tile", 4, 1, 16, 16, 0.0f, 5, KvType::F32},
    {"sinks_gqa4", 8, 2, 64, 64, 0.0f, 0, KvType::F32, true},
    {"sinks_window", 4, 1, 64, 64, 0.0f, 8, KvType::F16, true},
    // q8_0 rows are read as blocks and dequantized in the kernels; the bound
    // below holds unchanged, as the reference reads the same dequantized
    // values and the kernels widen them exactly (d * q fits f32).
    {"gqa7_q8_0", 14, 2, 64, 64, 0.0f, 0, KvType::Q8_0},
    {"softcap_window_q8_0", 8, 2, 32, 32, 20.0f, 100, KvType::Q8_0},
    {"sinks_window_q8_0", 4, 1, 64, 64, 0.0f, 8, KvType::Q8_0, true},
    {"mha_wide_q8_0", 2, 2, 128, 96, 0.0f, 0, KvType::Q8_0},
    {"latent_f16", 4, 1, 160, 128, 0.0f, 0, KvType::F16, false, true},
    {"latent_q8_0", 4, 1, 160, 128, 0.0f, 0, KvType::Q8_0, false, true},
};

struct Filled {
  ModelConfig config;
  AttentionShape shape;
  KvCache cache;
  std::vector<TokenInput> tokens;
  std::vector<float> q;
  std::vector<float> sinks;  // shape.sinks points here (a move keeps the buffer)
};

constexpr uint32_t kCtx = 400;

// Two sequences: one with the positions around tile edges and far in, the
// other a prompt's worth of consecutive positions.
Filled make_setup(const Case& c) {
  ModelConfig config;
  config.n_layer = 2;
  config.n_head = c.n_head;
  config.n_head_kv = c.n_head_kv;
  config.head_dim_k = c.head_dim_k;
  config.head_dim_v = c.head_dim_v;
  if (c.latent) config.mla.kv_lora_rank = c.head_dim_v;  // one KV head; the cache stores K rows only
  const AttentionShape shape{c.n_head, c.n_head_kv, c.head_dim_k, c.head_dim_v,
                             1.0f / std::sqrt(static_cast<float>(c.head_dim_k)), c.softcap, c.window};
  Filled s{config, shape, KvCache(config, {kCtx, 2, c.type}), {}, {}, {}};
  if (c.sinks) {
    // Below, among and far above the scores (|score| reaches ~8 here): the
    // sink then takes nothing, a share, or nearly all of the mass.
    for (uint32_t h = 0; h < c.n_head; ++h) s.sinks.push_back(std::array{-6.0f, 0.5f, 4.0f, 14.0f}[h % 4]);
    s.shape.sinks = s.sinks.data();
  }
  std::mt19937 rng(21);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> k(config.k_dim()), v(config.v_dim());
  for (uint32_t seq = 0; seq < 2; ++seq) {
    for (uint32_t layer = 0; layer < 2; ++layer) {
      for (uint32_t pos = 0; pos < kCtx; ++pos) {
        // Keys scaled so that the softmax is neither flat nor one-hot.
        for (float& x : k) x = 2.5f * normal(rng);
        for (float& x : v) x = normal(rng);
        s.cache.store_k(seq, layer, pos, k.data());
        if (!c.latent) s.cache.store_v(seq, layer, pos, v.data());
      }
    }
  }
  for (uint32_t pos : {0u, 1u, 62u, 63u, 64u, 65u, 127u, 128u, 200u, 399u}) s.tokens.push_back({0, pos, 0, false});
  for (uint32_t pos = 40; pos < 75; ++pos) s.tokens.push_back({0, pos, 1, false});
  s.q.resize(s.tokens.size() * config.q_dim());
  for (float& x : s.q) x = normal(rng);
  return s;
}

std::vector<float> run_fast(const Filled& s, std::span<const TokenInput> tokens, const float* q,
                            quant::ThreadPool& pool) {
  Attention attention(static_cast<int>(pool.num_threads()));
  std::vector<float> out(tokens.size() * s.shape.n_head * s.shape.head_dim_v);
  attention.run(s.shape, s.cache, 1, tokens, q, out.data(), pool);
  return out;
}

class AttentionTest : public ::testing::TestWithParam<Case> {};
INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

// Bound, per (token, head), with exact scores s_j (double, from the cache's
// values), m = max s_j and weights w_j = exp(s_j - m):
// - each f32 score is off by at most e_j: the dot's rounding (d terms, as
//   vector_kernels_test bounds it) times the scale, the scaling's and the
//   cap's roundings (2^-24 |s| each);
// - each weight exp(s_j - running max), however often rescaled, is then off
//   relatively by at most e_j + |s_j - m| 2^-24 (its argument's rounding) +
//   2^-22 (exp within 2 ulp); a rescaling factor multiplies the output and
//   the sum alike, so its own error cancels but for the two products'
//   roundings per tile;
// - the weighted sum and the sum of weights add n terms each, plus those
//   rescalings, plus the final division.
// So |out - exact| <= (2.02 max_j eps_j + (2n + 4 tiles + 6) 2^-24) * sum_j w_j |v_j| / sum_j w_j.
// A sink is one more score (exact, so e = 0) with v = 0, folded in after
// the tiles like one more rescaling and term: n and the tiles grow by one.
TEST_P(AttentionTest, WithinF32RoundingOfReference) {
  const Filled s = make_setup(GetParam());
  quant::ThreadPool pool(2);
  const std::vector<float> got = run_fast(s, s.tokens, s.q.data(), pool);
  std::vector<double> want(got.size());
  attention_reference(s.shape, s.cache, 1, s.tokens, s.q.data(), want.data());

  const AttentionShape& sh = s.shape;
  const uint32_t group = sh.n_head / sh.n_head_kv;
  std::vector<float> k(s.cache.k_dim()), v(s.cache.v_dim());
  for (std::size_t t = 0; t < s.tokens.size(); ++t) {
    const TokenInput& tok = s.tokens[t];
    const uint32_t p0 = sh.window > 0 && tok.pos + 1 > sh.window ? tok.pos + 1 - sh.window : 0;
    const uint32_t n = tok.pos + 1 - p0;
    const uint32_t tiles = tok.pos / Attention::kTilePositions - p0 / Attention::kTilePositions + 1;
    for (uint32_t head = 0; head < sh.n_head; ++head) {
      const uint32_t kv = head / group;
      const float* qh = s.q.data() + (t * sh.n_head + head) * sh.head_dim_k;
      std::vector<double> score(n), err(n);
      for (uint32_t j = 0; j < n; ++j) {
        s.cache.load_k(tok.seq, 1, p0 + j, 1, k.data());
        double dot = 0.0, magnitude = 0.0;
        for (uint32_t d = 0; d < sh.head_dim_k; ++d) {
          dot += double{qh[d]} * k[kv * sh.head_dim_k + d];
          magnitude += std::fabs(double{qh[d]} * k[kv * sh.head_dim_k + d]);
        }
        double e = (sh.head_dim_k + 1.0) * 0x1p-24 * 1.01 * magnitude * sh.scale;
        double x = dot * sh.scale;
        e += 0x1p-24 * std::fabs(x);
        if (sh.softcap > 0.0f) {
          x = sh.softcap * std::tanh(x / sh.softcap);
          e += 0x1p-24 * std::fabs(x);
        }
        score[j] = x, err[j] = e;
      }
      const bool sink = sh.sinks != nullptr;
      const double sink_score = sink ? double{sh.sinks[head]} : -INFINITY;
      const double m = std::max(sink_score, *std::max_element(score.begin(), score.end()));
      double eps = sink ? std::fabs(sink_score - m) * 0x1p-24 + 0x1p-22 : 0.0;
      for (uint32_t j = 0; j < n; ++j) eps = std::max(eps, err[j] + std::fabs(score[j] - m) * 0x1p-24 + 0x1p-22);
      std::vector<double> weighted_abs(sh.head_dim_v, 0.0);
      double weight_sum = sink ? std::exp(sink_score - m) : 0.0;
      for (uint32_t j = 0; j < n; ++j) {
        s.cache.load_v(tok.seq, 1, p0 + j, 1, v.data());
        const double w = std::exp(score[j] - m);
        weight_sum += w;
        for (uint32_t d = 0; d < sh.head_dim_v; ++d) weighted_abs[d] += w * std::fabs(v[kv * sh.head_dim_v + d]);
      }
      for (uint32_t d = 0; d < sh.head_dim_v; ++d) {
        const std::size_t i = (t * sh.n_head + head) * sh.head_dim_v + d;
        const double terms = n + (sink ? 1.0 : 0.0), folds = tiles + (sink ? 1.0 : 0.0);
        const double bound = (2.02 * eps + (2.0 * terms + 4.0 * folds + 6.0) * 0x1p-24) * weighted_abs[d] / weight_sum;
        ASSERT_NEAR(got[i], want[i], bound) << "token " << t << " pos " << tok.pos << " head " << head << " d " << d;
      }
    }
  }
}

// Each token alone, and the batch cut into chunks that straddle the groups
// of tokens the attention works on together: the same bits.
TEST_P(AttentionTest, ResultDoesNotDependOnTheBatch) {
  const Filled s = make_setup(GetParam());
  quant::ThreadPool pool(2);
  const std::vector<float> whole = run_fast(s, s.tokens, s.q.data(), pool);
  const std::size_t q_row = std::size_t{s.shape.n_head} * s.shape.head_dim_k;
  const std::size_t out_row = std::size_t{s.shape.n_head} * s.shape.head_dim_v;
  for (std::size_t chunk : {std::size_t{1}, std::size_t{5}, std::size_t{Attention::kTokensPerGroup + 3}}) {
    for (std::size_t t0 = 0; t0 < s.tokens.size(); t0 += chunk) {
      const std::size_t t1 = std::min(t0 + chunk, s.tokens.size());
      const std::vector<float> part = run_fast(s, std::span(s.tokens).subspan(t0, t1 - t0), s.q.data() + t0 * q_row, pool);
      ASSERT_EQ(std::memcmp(part.data(), whole.data() + t0 * out_row, part.size() * sizeof(float)), 0)
          << "chunk " << chunk << " from token " << t0;
    }
  }
}

}  // namespace
}  // namespace lamina::model::cpu
