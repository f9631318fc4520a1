#include "attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "lamina/quant/thread_pool.h"
#include "ops.h"
#include "vector_kernels.h"

namespace lamina::model::cpu {

Attention::Attention(uint32_t n_ctx, int n_threads, const ModelConfig& config) {
  scratch_.resize(static_cast<std::size_t>(std::max(1, n_threads)));
  for (auto& s : scratch_) {
    s.scores.resize(n_ctx);
    s.k_rows.resize(std::size_t{n_ctx} * config.k_dim());
    s.v_rows.resize(std::size_t{n_ctx} * config.v_dim());
    s.acc.resize(config.head_dim_v);
  }
}

void Attention::run(const AttentionShape& shape, const KvCache& cache, uint32_t layer,
                    std::span<const TokenInput> tokens, const float* q, float* out, quant::ThreadPool& pool) {
  const uint32_t group = shape.n_head / shape.n_head_kv;
  const std::size_t k_dim = std::size_t{shape.n_head_kv} * shape.head_dim_k;
  const std::size_t v_dim = std::size_t{shape.n_head_kv} * shape.head_dim_v;
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
      const float* k_rows = cache.k_rows_f32(tok.seq, layer, p0);
      const float* v_rows = cache.v_rows_f32(tok.seq, layer, p0);
      if (!k_rows) {
        cache.load_k(tok.seq, layer, p0, n, s.k_rows.data());
        cache.load_v(tok.seq, layer, p0, n, s.v_rows.data());
        k_rows = s.k_rows.data();
        v_rows = s.v_rows.data();
      }
      const std::size_t t = item / shape.n_head_kv;
      for (uint32_t g = 0; g < group; ++g) {
        const uint32_t head = kv_head * group + g;
        const float* qh = q + t * q_stride + std::size_t{head} * shape.head_dim_k;
        float max_score = -INFINITY;
        for (uint32_t j = 0; j < n; ++j) {
          const float* kj = k_rows + j * k_dim + std::size_t{kv_head} * shape.head_dim_k;
          float score = static_cast<float>(dot_f64(qh, kj, shape.head_dim_k)) * shape.scale;
          if (shape.softcap > 0.0f) score = softcap(score, shape.softcap);
          s.scores[j] = score;
          max_score = std::max(max_score, score);
        }
        double sum = 0.0;
        for (uint32_t j = 0; j < n; ++j) {
          s.scores[j] = static_cast<float>(std::exp(static_cast<double>(s.scores[j]) - max_score));
          sum += s.scores[j];
        }
        const double inv = 1.0 / sum;
        // Accumulated in double: the output is quantized next, and a sum
        // closer to exact flips fewer Q8 roundings against other engines.
        double* acc = s.acc.data();
        std::fill(acc, acc + shape.head_dim_v, 0.0);
        for (uint32_t j = 0; j < n; ++j) {
          const double p = s.scores[j] * inv;
          add_scaled_f64(p, v_rows + j * v_dim + std::size_t{kv_head} * shape.head_dim_v, acc, shape.head_dim_v);
        }
        float* oh = out + t * out_stride + std::size_t{head} * shape.head_dim_v;
        for (uint32_t d = 0; d < shape.head_dim_v; ++d) oh[d] = static_cast<float>(acc[d]);
      }
    }
  });
}

}  // namespace lamina::model::cpu
