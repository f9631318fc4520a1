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
  // Per head: a logit that joins the softmax's denominator and adds no
  // value (gpt-oss's attention sinks); null: none.
  const float* sinks = nullptr;
};

// For each token t and head h: out[t][h] = softmax over visible cache
// positions of (q[t][h] . k) * scale (and the head's sink, if any), times v. The cache's rows are read
// where they lie, f32 or f16 (widened in registers); q8_0 rows are widened
// to f32 once per tile and KV head for all the queries of a group.
//
// Tiled: the positions go by tiles of kTilePositions, starting at multiples
// of it, and a softmax runs online over them (running max, sum and
// unnormalized output, rescaled when the max grows). A group of queries (a
// few tokens of the batch times the heads sharing a KV head) passes over each
// tile while it is in the core's cache, so K and V are read from memory once
// per group rather than once per query, and the scratch no longer grows with
// the context. A query's arithmetic depends only on its own position: its
// tiles are cut at absolute positions, and which other queries share a tile
// changes the order of work, never a query's sums. So the result for a
// sequence does not depend on its batch, on how its prompt is chunked, or on
// a cached prefix.
class Attention {
 public:
  static constexpr uint32_t kTilePositions = 64;
  static constexpr uint32_t kTokensPerGroup = 16;
  static_assert(kKvBlockPositions % kTilePositions == 0, "a tile reads its rows from one KV block");

  explicit Attention(int n_threads);
  void run(const AttentionShape& shape, const KvCache& cache, uint32_t layer,
           std::span<const TokenInput> tokens, const float* q, float* out, quant::ThreadPool& pool);

 private:
  struct Scratch {
    Workspace scores;  // per query of a group: one tile's q . k, scaled and capped, then exp(score - max)
    Workspace acc;     // per query: the unnormalized output
    Workspace max, sum;  // per query: the running max and sum of exp(score - max)
    Workspace k_tile, v_tile;  // q8_0: one tile's K and V rows of a KV head, widened to f32
  };
  template <class Row>
  void run_rows(const AttentionShape& shape, const KvCache& cache, uint32_t layer,
                std::span<const TokenInput> tokens, const float* q, float* out, quant::ThreadPool& pool);
  std::vector<Scratch> scratch_;
};

// The slow, obvious form the tests hold Attention to: one (token, head) at a
// time, every score, then the softmax and the weighted sum, all in double
// from the cache's values. out is [tokens][n_head * head_dim_v].
void attention_reference(const AttentionShape& shape, const KvCache& cache, uint32_t layer,
                         std::span<const TokenInput> tokens, const float* q, double* out);

}  // namespace lamina::model::cpu
