#include "attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <type_traits>

#include "lamina/quant/thread_pool.h"
#include "ops.h"
#include "vector_kernels.h"

namespace lamina::model::cpu {
namespace {

// The rows of K (or V, `value`) from pos0 on, as the cache holds them.
template <class Row>
const Row* cache_rows(const KvCache& cache, bool value, uint32_t seq, uint32_t layer, uint32_t pos0) {
  if constexpr (std::is_same_v<Row, float>) {
    return value ? cache.v_rows_f32(seq, layer, pos0) : cache.k_rows_f32(seq, layer, pos0);
  } else {
    return value ? cache.v_rows_f16(seq, layer, pos0) : cache.k_rows_f16(seq, layer, pos0);
  }
}

}  // namespace

Attention::Attention(uint32_t n_ctx, int n_threads) {
  scratch_.resize(static_cast<std::size_t>(std::max(1, n_threads)));
  for (auto& s : scratch_) s.scores.resize(n_ctx);
}

void Attention::run(const AttentionShape& shape, const KvCache& cache, uint32_t layer,
                    std::span<const TokenInput> tokens, const float* q, float* out, quant::ThreadPool& pool) {
  if (cache.type() == KvType::F16) {
    run_rows<uint16_t>(shape, cache, layer, tokens, q, out, pool);
  } else {
    run_rows<float>(shape, cache, layer, tokens, q, out, pool);
  }
}

template <class Row>
void Attention::run_rows(const AttentionShape& shape, const KvCache& cache, uint32_t layer,
                         std::span<const TokenInput> tokens, const float* q, float* out, quant::ThreadPool& pool) {
  const uint32_t group = shape.n_head / shape.n_head_kv;
  const std::size_t k_dim = cache.k_dim();
  const std::size_t v_dim = cache.v_dim();
  const std::size_t q_stride = std::size_t{shape.n_head} * shape.head_dim_k;
  const std::size_t out_stride = std::size_t{shape.n_head} * shape.head_dim_v;
  const std::size_t n_items = tokens.size() * shape.n_head_kv;

  // Threads take items from a shared counter: their costs differ (a prompt's
  // later tokens see more positions), and each item's arithmetic is the same
  // whichever thread runs it.
  std::atomic<std::size_t> next{0};
  pool.run_on_all([&](std::size_t thread) {
    Scratch& s = scratch_[thread];
    for (std::size_t item = next.fetch_add(1, std::memory_order_relaxed); item < n_items;
         item = next.fetch_add(1, std::memory_order_relaxed)) {
      const TokenInput& tok = tokens[item / shape.n_head_kv];
      const uint32_t kv_head = static_cast<uint32_t>(item % shape.n_head_kv);
      const uint32_t p1 = tok.pos + 1;
      const uint32_t p0 = shape.window > 0 && tok.pos + 1 > shape.window ? tok.pos + 1 - shape.window : 0;
      const uint32_t n = p1 - p0;
      const Row* k = cache_rows<Row>(cache, false, tok.seq, layer, p0) + std::size_t{kv_head} * shape.head_dim_k;
      const Row* v = cache_rows<Row>(cache, true, tok.seq, layer, p0) + std::size_t{kv_head} * shape.head_dim_v;
      const std::size_t t = item / shape.n_head_kv;
      for (uint32_t g = 0; g < group; ++g) {
        const uint32_t head = kv_head * group + g;
        const float* qh = q + t * q_stride + std::size_t{head} * shape.head_dim_k;
        float* scores = s.scores.data();
        dot_rows(qh, k, k_dim, n, shape.head_dim_k, scores);
        float max_score = -INFINITY;
        for (uint32_t j = 0; j < n; ++j) {
          float score = scores[j] * shape.scale;
          if (shape.softcap > 0.0f) score = softcap(score, shape.softcap);
          scores[j] = score;
          max_score = std::max(max_score, score);
        }
        // The weights stay unnormalized; the output is divided once.
        const float inv = 1.0f / exp_shift_sum(scores, n, max_score);
        float* oh = out + t * out_stride + std::size_t{head} * shape.head_dim_v;
        std::fill(oh, oh + shape.head_dim_v, 0.0f);
        accumulate_rows(scores, v, v_dim, n, shape.head_dim_v, oh);
        for (uint32_t d = 0; d < shape.head_dim_v; ++d) oh[d] *= inv;
      }
    }
  });
}

}  // namespace lamina::model::cpu
