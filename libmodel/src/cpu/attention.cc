#include "attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
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

template <class Row>
constexpr bool kQ8_0 = std::is_same_v<Row, quant::BlockQ8_0>;
// What the dot and accumulate kernels read: the cache's f32 or f16 rows
// where they lie, q8_0 rows widened to f32 first.
template <class Row>
using KernelRow = std::conditional_t<kQ8_0<Row>, float, Row>;

// The first position a token at `pos` sees.
uint32_t first_visible(const AttentionShape& shape, uint32_t pos) {
  return shape.window > 0 && pos + 1 > shape.window ? pos + 1 - shape.window : 0;
}

}  // namespace

Attention::Attention(int n_threads) {
  scratch_.resize(static_cast<std::size_t>(std::max(1, n_threads)));
}

void Attention::run(const AttentionShape& shape, const KvCache& cache, uint32_t layer,
                    std::span<const TokenInput> tokens, const float* q, float* out, quant::ThreadPool& pool) {
  const std::size_t group = shape.n_head / shape.n_head_kv;
  const std::size_t n_queries = std::size_t{kTokensPerGroup} * group;
  for (auto& s : scratch_) {
    if (s.scores.size() < group * kTilePositions) s.scores.resize(group * kTilePositions);
    if (s.acc.size() < n_queries * shape.head_dim_v) s.acc.resize(n_queries * shape.head_dim_v);
    if (s.max.size() < n_queries) s.max.resize(n_queries), s.sum.resize(n_queries);
    if (cache.type() == KvType::Q8_0) {
      if (s.k_tile.size() < kTilePositions * shape.head_dim_k) s.k_tile.resize(kTilePositions * shape.head_dim_k);
      if (s.v_tile.size() < kTilePositions * shape.head_dim_v) s.v_tile.resize(kTilePositions * shape.head_dim_v);
    }
  }
  if (cache.type() == KvType::Q8_0 && (shape.head_dim_k % quant::kQK != 0 || shape.head_dim_v % quant::kQK != 0))
    throw ModelError("attention over a q8_0 KV cache: head dims " + std::to_string(shape.head_dim_k) + " and " +
                     std::to_string(shape.head_dim_v) + " are not whole blocks of " + std::to_string(quant::kQK));
  switch (cache.type()) {
    case KvType::F32: return run_rows<float>(shape, cache, layer, tokens, q, out, pool);
    case KvType::F16: return run_rows<uint16_t>(shape, cache, layer, tokens, q, out, pool);
    case KvType::Q8_0: return run_rows<quant::BlockQ8_0>(shape, cache, layer, tokens, q, out, pool);
  }
}

template <class Row>
void Attention::run_rows(const AttentionShape& shape, const KvCache& cache, uint32_t layer,
                         std::span<const TokenInput> tokens, const float* q, float* out, quant::ThreadPool& pool) {
  const uint32_t group = shape.n_head / shape.n_head_kv;
  // Rows in the cache, K and V; q8_0 rows are whole blocks of 32 values.
  constexpr std::size_t kUnit = kQ8_0<Row> ? quant::kQK : 1;
  const std::size_t cache_k_stride = cache.k_dim() / kUnit;
  const std::size_t cache_v_stride = cache.v_stride() / kUnit;
  // Rows the kernels read: the cache's, or the widened tile's.
  const std::size_t k_stride = kQ8_0<Row> ? shape.head_dim_k : cache_k_stride;
  const std::size_t v_stride = kQ8_0<Row> ? shape.head_dim_v : cache_v_stride;
  const std::size_t q_stride = std::size_t{shape.n_head} * shape.head_dim_k;
  const std::size_t out_stride = std::size_t{shape.n_head} * shape.head_dim_v;
  const std::size_t n_groups = (tokens.size() + kTokensPerGroup - 1) / kTokensPerGroup;
  const std::size_t n_items = n_groups * shape.n_head_kv;

  // Threads take items (a group of tokens, one KV head) from a shared
  // counter: their costs differ (a prompt's later tokens see more
  // positions), and each query's arithmetic is the same whichever thread
  // runs it.
  std::atomic<std::size_t> next{0};
  pool.run_on_all([&](std::size_t thread) {
    Scratch& s = scratch_[thread];
    for (std::size_t item = next.fetch_add(1, std::memory_order_relaxed); item < n_items;
         item = next.fetch_add(1, std::memory_order_relaxed)) {
      const std::size_t t0 = item / shape.n_head_kv * kTokensPerGroup;
      const std::size_t t1 = std::min(t0 + kTokensPerGroup, tokens.size());
      const uint32_t kv_head = static_cast<uint32_t>(item % shape.n_head_kv);
      const std::size_t n_queries = (t1 - t0) * group;
      std::fill(s.max.begin(), s.max.begin() + n_queries, -INFINITY);
      std::fill(s.sum.begin(), s.sum.begin() + n_queries, 0.0f);
      std::fill(s.acc.begin(), s.acc.begin() + n_queries * shape.head_dim_v, 0.0f);
      // q8_0: rows [tile_start, tile_start + tile_rows) of slot tile_seq,
      // this KV head's slice, widened in s.k_tile / s.v_tile.
      uint32_t tile_seq = UINT32_MAX, tile_start = 0, tile_rows = 0;
      uint32_t lo = UINT32_MAX, hi = 0;
      for (std::size_t t = t0; t < t1; ++t) {
        lo = std::min(lo, first_visible(shape, tokens[t].pos));
        hi = std::max(hi, tokens[t].pos + 1);
      }
      for (uint32_t tile = lo / kTilePositions * kTilePositions; tile < hi; tile += kTilePositions) {
        for (std::size_t t = t0; t < t1; ++t) {
          const TokenInput& tok = tokens[t];
          const uint32_t p0 = std::max(tile, first_visible(shape, tok.pos));
          const uint32_t p1 = std::min(tile + kTilePositions, tok.pos + 1);
          if (p0 >= p1) continue;
          const uint32_t n = p1 - p0;
          const KernelRow<Row>* k;
          const KernelRow<Row>* v;
          if constexpr (kQ8_0<Row>) {
            // Widened once per tile and slot for all the item's queries
            // (the values exactly, so each query's sums are unchanged),
            // from the tile's start up to the last row a query reads.
            if (tok.seq != tile_seq || tile != tile_start) tile_seq = tok.seq, tile_start = tile, tile_rows = 0;
            if (p1 - tile > tile_rows) {
              const uint32_t from = tile + tile_rows, count = p1 - from;
              dequantize_q8_0_rows(cache.k_rows_q8_0(tok.seq, layer, from) + kv_head * shape.head_dim_k / kUnit,
                                   cache_k_stride, count, shape.head_dim_k, s.k_tile.data() + tile_rows * k_stride);
              dequantize_q8_0_rows(cache.v_rows_q8_0(tok.seq, layer, from) + kv_head * shape.head_dim_v / kUnit,
                                   cache_v_stride, count, shape.head_dim_v, s.v_tile.data() + tile_rows * v_stride);
              tile_rows = p1 - tile;
            }
            k = s.k_tile.data() + (p0 - tile) * k_stride;
            v = s.v_tile.data() + (p0 - tile) * v_stride;
          } else {
            k = cache_rows<Row>(cache, false, tok.seq, layer, p0) + std::size_t{kv_head} * shape.head_dim_k;
            v = cache_rows<Row>(cache, true, tok.seq, layer, p0) + std::size_t{kv_head} * shape.head_dim_v;
          }
          // The group's queries pass over the tile together (each K and V
          // row loaded once for several of them); each query's sums are
          // those it gets alone.
          const std::size_t first = (t - t0) * group;
          float* scores = s.scores.data();  // [group][kTilePositions]
          dot_rows(q + t * q_stride + std::size_t{kv_head} * group * shape.head_dim_k, shape.head_dim_k, group, k,
                   k_stride, n, shape.head_dim_k, scores, kTilePositions);
          for (uint32_t g = 0; g < group; ++g) {
            const std::size_t query = first + g;
            float* acc = s.acc.data() + query * shape.head_dim_v;
            float* query_scores = scores + std::size_t{g} * kTilePositions;
            float tile_max = -INFINITY;
            for (uint32_t j = 0; j < n; ++j) {
              float score = query_scores[j] * shape.scale;
              if (shape.softcap > 0.0f) score = softcap(score, shape.softcap);
              query_scores[j] = score;
              tile_max = std::max(tile_max, score);
            }
            // A larger max rescales what came before (the first tile's
            // factor is exp(-inf) = 0, on zeros).
            if (tile_max > s.max[query]) {
              const float factor = std::exp(s.max[query] - tile_max);
              s.sum[query] *= factor;
              for (uint32_t d = 0; d < shape.head_dim_v; ++d) acc[d] *= factor;
              s.max[query] = tile_max;
            }
            s.sum[query] += exp_shift_sum(query_scores, n, s.max[query]);
          }
          accumulate_rows(scores, kTilePositions, group, v, v_stride, n, shape.head_dim_v,
                          s.acc.data() + first * shape.head_dim_v, shape.head_dim_v);
        }
      }
      // The weights stay unnormalized; the output is divided once. A sink
      // joins the sum last, after every tile, so it too depends only on
      // the query's own positions.
      for (std::size_t t = t0; t < t1; ++t) {
        for (uint32_t g = 0; g < group; ++g) {
          const std::size_t query = (t - t0) * group + g;
          float* acc = s.acc.data() + query * shape.head_dim_v;
          if (shape.sinks != nullptr) {
            const float sink = shape.sinks[kv_head * group + g];
            if (sink > s.max[query]) {
              const float factor = std::exp(s.max[query] - sink);
              s.sum[query] *= factor;
              for (uint32_t d = 0; d < shape.head_dim_v; ++d) acc[d] *= factor;
              s.max[query] = sink;
            }
            s.sum[query] += std::exp(sink - s.max[query]);
          }
          const float inv = 1.0f / s.sum[query];
          float* oh = out + t * out_stride + std::size_t{kv_head * group + g} * shape.head_dim_v;
          for (uint32_t d = 0; d < shape.head_dim_v; ++d) oh[d] = acc[d] * inv;
        }
      }
    }
  });
}

void attention_reference(const AttentionShape& shape, const KvCache& cache, uint32_t layer,
                         std::span<const TokenInput> tokens, const float* q, double* out) {
  const uint32_t group = shape.n_head / shape.n_head_kv;
  std::vector<float> k(cache.k_dim()), v(cache.v_dim());
  std::vector<double> scores;
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const TokenInput& tok = tokens[t];
    const uint32_t p0 = first_visible(shape, tok.pos);
    for (uint32_t head = 0; head < shape.n_head; ++head) {
      const uint32_t kv_head = head / group;
      const float* qh = q + (t * shape.n_head + head) * shape.head_dim_k;
      scores.clear();
      for (uint32_t p = p0; p <= tok.pos; ++p) {
        cache.load_k(tok.seq, layer, p, 1, k.data());
        double dot = 0.0;
        for (uint32_t d = 0; d < shape.head_dim_k; ++d) dot += double{qh[d]} * k[kv_head * shape.head_dim_k + d];
        dot *= shape.scale;
        if (shape.softcap > 0.0f) dot = shape.softcap * std::tanh(dot / shape.softcap);
        scores.push_back(dot);
      }
      const double sink = shape.sinks != nullptr ? double{shape.sinks[head]} : -INFINITY;
      const double max = std::max(sink, *std::max_element(scores.begin(), scores.end()));
      double sum = std::exp(sink - max);
      for (double& x : scores) sum += x = std::exp(x - max);
      double* oh = out + (t * shape.n_head + head) * shape.head_dim_v;
      std::fill(oh, oh + shape.head_dim_v, 0.0);
      for (uint32_t p = p0; p <= tok.pos; ++p) {
        cache.load_v(tok.seq, layer, p, 1, v.data());
        for (uint32_t d = 0; d < shape.head_dim_v; ++d) oh[d] += scores[p - p0] * v[kv_head * shape.head_dim_v + d];
      }
      for (uint32_t d = 0; d < shape.head_dim_v; ++d) oh[d] /= sum;
    }
  }
}

}  // namespace lamina::model::cpu
