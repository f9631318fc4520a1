// The online-softmax pieces every attention kernel shares: scores in the
// log2 domain, states (maximum m, sum l, weighted values O) rescaled and
// folded left to right, a row's output with its sink. One definition, so
// the span records of any kernel fold with attention_combine's arithmetic.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "attention.h"

namespace lamina::cudaexec::detail {

inline constexpr float kLog2e = 1.4426950408889634f;

// The parameters of an attention launch over the KV cache (tiles: the
// tensor-core kernel's only) and of the combine pass that folds its span records.
struct SpanParams {
  AttentionShape s;
  KvView kv;
  uint32_t layer = 0;
  const float* q = nullptr;
  std::size_t q_stride = 0;
  const uint32_t* seq = nullptr;
  const uint32_t* pos = nullptr;
  const AttentionTile* tiles = nullptr;
  uint32_t n_spans = 0;
  float scale_log2 = 0.0f;  // scale * log2(e), for scores without a soft cap
  float* records = nullptr;
  float* out = nullptr;
  std::size_t out_stride = 0;
};

// The scores' factor in the log2 domain (without a soft cap).
inline float scale_log2(const AttentionShape& s) {
  return static_cast<float>(static_cast<double>(s.scale) * 1.4426950408889634);
}

// A launch's parameters (tiles and n_spans aside: the caller's).
inline SpanParams span_params(const AttentionShape& shape, const KvView& kv, uint32_t layer, const float* q,
                              std::size_t q_stride, const uint32_t* seq, const uint32_t* pos, float* workspace,
                              float* out, std::size_t out_stride) {
  SpanParams p;
  p.s = shape;
  p.kv = kv;
  p.layer = layer;
  p.q = q;
  p.q_stride = q_stride;
  p.seq = seq;
  p.pos = pos;
  p.scale_log2 = scale_log2(shape);
  p.records = workspace;
  p.out = out;
  p.out_stride = out_stride;
  return p;
}

__device__ __forceinline__ uint32_t first_key(const AttentionShape& s, uint32_t pos) {
  return s.window > 0 && pos + 1 > s.window ? pos + 1 - s.window : 0;
}

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The weight of a state with maximum `from` rescaled to maximum `to` (>= from).
__device__ __forceinline__ float rescale(float from, float to) { return from == to ? 1.0f : exp2_approx(from - to); }

// One step of the left-to-right fold of span states (maximum m, sum l) with
// the next span's (m_span, l_span): returns the factors for the fold so far
// (a) and for the span (b), by which both O parts are scaled and added.
__device__ __forceinline__ void fold_span(float& m, float& l, float m_span, float l_span, float& a, float& b) {
  const float m_new = fmaxf(m, m_span);
  a = rescale(m, m_new);
  b = rescale(m_span, m_new);
  l = __fmaf_rn(l_span, b, __fmul_rn(l, a));
  m = m_new;
}

// A row's output O / l, with the head's sink folded in first as one more
// span of weight 1 at its logit (in the scores' log2 domain).
__device__ __forceinline__ float row_output(float o, float m, float l, const AttentionShape& s, uint32_t head) {
  if (s.sinks == nullptr) return __fdiv_rn(o, l);
  float a, b;
  fold_span(m, l, __fmul_rn(s.sinks[head], kLog2e), 1.0f, a, b);
  return __fdiv_rn(__fmul_rn(o, a), l);
}

}  // namespace lamina::cudaexec::detail
