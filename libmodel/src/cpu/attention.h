// Causal multi-head attention of a batch of tokens over the KV cache.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lamina/model/config.h"
#include "lamina/model/forward.h"
#include "lamina/model/kv_cache.h"
#include "ops.h"

namespace lamina::quant {
class ThreadPool;
}

namespace lamina::model::cpu {

struct AttentionShape {
  uint32_t n_head, n_head_kv, head_dim_k, head_dim_v;
  float scale;    // applied to q.k
  float softcap;  // 0: none
  uint32_t window;  // 0: all earlier positions; else p - p' < window
};

// For each token t and head h: out[t][h] = softmax over visible cache
// positions of (q[t][h] . k) * scale, times v. Each (token, head) is computed
// alone, so the result never depends on the rest of the batch. The cache's
// rows are read where they lie, f32 or f16 (widened in registers).
// `scratch_` holds per-thread buffers, sized once to fit n_ctx.
class Attention {
 public:
  Attention(uint32_t n_ctx, int n_threads);
  void run(const AttentionShape& shape, const KvCache& cache, uint32_t layer,
           std::span<const TokenInput> tokens, const float* q, float* out, quant::ThreadPool& pool);

 private:
  struct Scratch {
    Workspace scores;  // q . k per position, scaled and capped, then exp(score - max)
  };
  template <class Row>
  void run_rows(const AttentionShape& shape, const KvCache& cache, uint32_t layer,
                std::span<const TokenInput> tokens, const float* q, float* out, quant::ThreadPool& pool);
  std::vector<Scratch> scratch_;
};

}  // namespace lamina::model::cpu
