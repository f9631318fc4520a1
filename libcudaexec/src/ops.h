// The kernels of the forward pass other than the weight products and
// attention: norms, RoPE, KV-cache stores, activations, residual adds,
// soft-capping and argmax. Device pointers; every launch goes on `stream`.
// Each row is computed the same way whatever the number of rows, so results
// do not depend on the batch.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "lamina/model/architecture.h"
#include "lamina/model/config.h"
#include "lamina/model/kv_cache.h"
#include "lamina/quant/format.h"

namespace lamina::cudaexec::detail {

// The model's own kinds (lamina/model/architecture.h, config.h).
using model::ExpertGating;
using model::NormKind;
using model::RopeKind;

// The activation of an FFN's hidden values: act(gate) * up, or act(gate)
// without up. SwigluOai is gpt-oss's clamped SwiGLU, min(g, 7) *
// sigmoid(1.702 min(g, 7)) * (clamp(u, -7, 7) + 1).
enum class Activation : uint8_t { Silu, Gelu, SwigluOai };

// How a mixture picks each token's experts and weighs them (ModelConfig's
// expert_gating, expert_weights_norm, expert_weights_scale): gating values
// (softmax over all experts, or sigmoid), the n_expert_used highest by value
// plus the layer's expert_selection_bias (lower id on ties), weighted by
// their gating values, divided by their sum when `normalize`, times `scale`.
struct ExpertRouting {
  ExpertGating gating = ExpertGating::Softmax;
  bool normalize = true;
  float scale = 1.0f;
};

// out[r] (+)= norm(x[r]) * w (+ b): RMSNorm or LayerNorm of n values; the
// reductions in double. x row r is x + src_row(r) * x_stride, where
// src_row(r) = rows ? rows[r] : r. With accumulate, the result is added to out.
void norm_rows(NormKind kind, const float* x, std::size_t x_stride, const int32_t* rows, const float* w,
               const float* b, float eps, uint32_t n, uint32_t n_rows, float* out, std::size_t out_stride,
               bool accumulate, cudaStream_t stream);

// norm_rows without accumulate, its rows also quantized to act_format (Q8_0,
// Q8_1 or Q8_K) at act, exactly as quantize_activations(act_format, out, ...)
// would convert them afterwards: one launch instead of two. Returns false,
// launching nothing, where that format or row length is not covered.
bool norm_rows_quantized(NormKind kind, const float* x, std::size_t x_stride, const int32_t* rows, const float* w,
                         const float* b, float eps, uint32_t n, uint32_t n_rows, float* out, std::size_t out_stride,
                         quant::QuantFormat act_format, void* act, cudaStream_t stream);

// The KV cache: pools of blocks of kKvBlockPositions positions, each
// [layer][pos][dim] in f16, for K (k_dim) and V (v_dim); slot `seq`'s
// position p lives in block blocks[seq * max_blocks + p / kKvBlockPositions]
// (a device table the executor keeps; libmodel's kv_cache.h has the host's
// meaning of the tables). Attention spans and chunks never cross a block.
struct KvView {
  __half* k = nullptr;
  __half* v = nullptr;
  const uint32_t* blocks = nullptr;
  // The layers [first_layer, first_layer + n_layer) this device holds.
  uint32_t first_layer = 0, n_layer = 0, max_blocks = 0, k_dim = 0, v_dim = 0;
  __device__ __host__ std::size_t block_rows(uint32_t block, uint32_t layer) const {
    return (std::size_t{block} * n_layer + (layer - first_layer)) * model::kKvBlockPositions;
  }
  // The row of `pos` (of a block this slot's table holds), in rows of k_dim
  // or v_dim values.
  __device__ std::size_t row(uint32_t seq, uint32_t layer, uint32_t pos) const {
    const uint32_t block = blocks[std::size_t{seq} * max_blocks + pos / model::kKvBlockPositions];
    return block_rows(block, layer) + pos % model::kKvBlockPositions;
  }
  __device__ std::size_t k_offset(uint32_t seq, uint32_t layer, uint32_t pos) const {
    return row(seq, layer, pos) * k_dim;
  }
  __device__ std::size_t v_offset(uint32_t seq, uint32_t layer, uint32_t pos) const {
    return row(seq, layer, pos) * v_dim;
  }
};

struct QkvShape {
  uint32_t n_head = 0, n_head_kv = 0, head_dim_k = 0, head_dim_v = 0;
  uint32_t rope_dims = 0;  // leading dims of each head that rotate
  RopeKind rope = RopeKind::None;
  float eps = 0.0f;        // of the per-head norms
};

// table[r * half + i] = magnitude * (cos, sin) of pos[r] * inv_freq[i]
// (double), for i < half: the rotations of a step, shared by every layer.
void rope_table(const double* inv_freq, const uint32_t* pos, uint32_t n_rows, uint32_t half, double magnitude,
                double2* table, cudaStream_t stream);

// Everything between the Q/K/V projections and attention, in one launch:
// per-head RMSNorm of Q and K (when q_norm / k_norm are given; sums in
// double), rotary embedding of row r by rope[r * rope_dims / 2 ..] (a
// rope_table), and the store of K and V in f16 at (seq[r], layer, pos[r]).
// Row r of q, k and v starts at r * stride.
void prepare_qkv(const QkvShape& shape, float* q, float* k, const float* v, std::size_t stride, uint32_t n_rows,
                 const float* q_norm, const float* k_norm, const double2* rope, const uint32_t* pos,
                 const uint32_t* seq, const KvView& kv, uint32_t layer, cudaStream_t stream);

// out[r][i] = act(gate[r][i]) * up[r][i] for i < n, or out = act(gate)
// when up is null (not for SwigluOai). gelu_table (65536 f16 results per f16
// input) selects the tabulated GELU; null computes it exactly.
void gated_activation(Activation kind, const float* gate, const float* up, std::size_t in_stride, uint32_t n,
                      uint32_t n_rows, const uint16_t* gelu_table, float* out, std::size_t out_stride,
                      cudaStream_t stream);

// gated_activation whose output rows are also quantized to act_format
// (Q8_0, Q8_1 or Q8_K) at act, exactly as quantize_activations(act_format,
// out, ...) would convert them afterwards: one launch instead of two.
// A null out keeps only the quantized rows (when they are all that is read).
// Returns false, launching nothing, where n is not a multiple of 256, the
// format is not one of those or kind is SwigluOai.
bool gated_activation_quantized(Activation kind, const float* gate, const float* up, std::size_t in_stride, uint32_t n,
                                uint32_t n_rows, const uint16_t* gelu_table, float* out, std::size_t out_stride,
                                quant::QuantFormat act_format, void* act, cudaStream_t stream);

// x[r] += y[r] for n values.
void add_rows(float* x, std::size_t x_stride, const float* y, std::size_t y_stride, uint32_t n, uint32_t n_rows,
              cudaStream_t stream);

// dst[i] = src row rows[i] (n values each; row i when rows is null), for i < n_rows.
void copy_rows(const float* src, std::size_t src_stride, const int32_t* rows, uint32_t n, uint32_t n_rows, float* dst,
               std::size_t dst_stride, cudaStream_t stream);

// dst row slots[i] = src row i * weights[i] (n values each), for i < n_rows.
void scatter_scaled_rows(const float* src, std::size_t src_stride, const int32_t* slots, const float* weights,
                         uint32_t n, uint32_t n_rows, float* dst, std::size_t dst_stride, cudaStream_t stream);

// out[r][i] = residual[r][i] + (bias[i] + in[r][0][i] + ... + in[r][n_terms - 1][i]), added in that
// order (bias and residual optional; out may equal residual), term k of row r at
// in + r * row_stride + k * term_stride, n values. Both fixed-order sums: an
// expert mixture's weighted outputs (terms adjacent within a row) and tensor
// parallelism's slices of a row-parallel product (slices of all rows one after another).
void sum_terms(const float* in, uint32_t n_terms, std::size_t row_stride, std::size_t term_stride, uint32_t n,
               uint32_t n_rows, const float* bias, const float* residual, float* out, std::size_t out_stride,
               cudaStream_t stream);

// x = cap * tanh(x / cap), n values in place.
void softcap(float* x, std::size_t n, float cap, cudaStream_t stream);

// ids[r] = index of the largest of n values of row r (lowest on ties), in
// two passes: the best of each of kArgmaxParts parts of a row into `parts`
// (n_rows * kArgmaxParts entries), then the best of those.
struct ArgmaxCandidate {
  float v;
  int32_t i;
};
inline constexpr uint32_t kArgmaxParts = 128;
void argmax_rows(const float* x, uint32_t n, uint32_t n_rows, ArgmaxCandidate* parts, int32_t* ids,
                 cudaStream_t stream);

// Experts a mixture may have on the GPU (routing and grouping keep per-expert
// tables of this size).
inline constexpr uint32_t kMaxExperts = 256;

// Each token's experts and weights from its router logits [n_tokens x
// n_expert] as `rule` says (selection_bias: n_expert values or null):
// chosen and weights [n_tokens x n_used], by rank.
void route_experts(const float* logits, uint32_t n_tokens, uint32_t n_expert, uint32_t n_used,
                   const ExpertRouting& rule, const float* selection_bias, int32_t* chosen, float* weights,
                   cudaStream_t stream);

// The n_tokens x n_used choices of route_experts grouped by expert: expert
// e's entries are [first[e], first[e + 1]) (first: n_expert + 1 offsets), in
// (token, rank) order, each with its token (rows), its choice index t *
// n_used + rank (slots) and weight. Device arrays; no host round trip.
void group_expert_rows(const int32_t* chosen, const float* chosen_w, uint32_t n_tokens, uint32_t n_used,
                       uint32_t n_expert, uint32_t* first, int32_t* rows, int32_t* slots, float* weights,
                       cudaStream_t stream);

}  // namespace lamina::cudaexec::detail
