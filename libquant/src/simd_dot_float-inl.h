// Per-target dot kernels of F32, F16 and BF16 weights against f32
// activations: weights widened to f32 (exactly), products fused into f32
// accumulators, full vector width.
//
// Batch invariance as in simd_matmul_tiles-inl.h: each output uses two
// accumulators (alternate vectors; a ragged tail, zero-padded, goes to the
// second) and one final sum, whatever the tile size.

#if defined(LAMINA_QUANT_SIMD_DOT_FLOAT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_DOT_FLOAT_INL_H_
#undef LAMINA_QUANT_SIMD_DOT_FLOAT_INL_H_
#else
#define LAMINA_QUANT_SIMD_DOT_FLOAT_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {
namespace fl {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

struct WeightsF32 {
  using T = float;
  static HWY_INLINE VF Load(const T* HWY_RESTRICT p) { return hn::LoadU(DF(), p); }
};
struct WeightsF16 {
  using T = hwy::float16_t;
  static HWY_INLINE VF Load(const T* HWY_RESTRICT p) {
    return hn::PromoteTo(DF(), hn::LoadU(hn::Rebind<T, DF>(), p));
  }
};
struct WeightsBF16 {
  using T = hwy::bfloat16_t;
  static HWY_INLINE VF Load(const T* HWY_RESTRICT p) {
    return hn::PromoteTo(DF(), hn::LoadU(hn::Rebind<T, DF>(), p));
  }
};

// y[r * y_stride] = dot(w, x + r * x_stride) for r < R, over n values.
template <class Weights, size_t R>
HWY_INLINE void DotTile(const typename Weights::T* HWY_RESTRICT w, size_t n,
                        const float* HWY_RESTRICT x, size_t x_stride, float* HWY_RESTRICT y,
                        size_t y_stride) {
  const DF d;
  const size_t N = hn::Lanes(d);
  VF acc0[R];
  VF acc1[R];
  HWY_UNROLL(4)
  for (size_t r = 0; r < R; ++r) acc0[r] = acc1[r] = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const VF w0 = Weights::Load(w + i);
    const VF w1 = Weights::Load(w + i + N);
    HWY_UNROLL(4)
    for (size_t r = 0; r < R; ++r) {
      acc0[r] = hn::MulAdd(w0, hn::LoadU(d, x + r * x_stride + i), acc0[r]);
      acc1[r] = hn::MulAdd(w1, hn::LoadU(d, x + r * x_stride + i + N), acc1[r]);
    }
  }
  if (i + N <= n) {
    const VF w0 = Weights::Load(w + i);
    HWY_UNROLL(4)
    for (size_t r = 0; r < R; ++r) acc0[r] = hn::MulAdd(w0, hn::LoadU(d, x + r * x_stride + i), acc0[r]);
    i += N;
  }
  if (i < n) {
    constexpr size_t kMaxLanes = hn::MaxLanes(DF());
    HWY_ALIGN typename Weights::T w_tail[kMaxLanes] = {};
    std::memcpy(w_tail, w + i, (n - i) * sizeof(w_tail[0]));
    const VF w0 = Weights::Load(w_tail);
    for (size_t r = 0; r < R; ++r) {
      HWY_ALIGN float x_tail[kMaxLanes] = {};
      std::memcpy(x_tail, x + r * x_stride + i, (n - i) * sizeof(float));
      acc1[r] = hn::MulAdd(w0, hn::Load(d, x_tail), acc1[r]);
    }
  }
  HWY_UNROLL(4)
  for (size_t r = 0; r < R; ++r) {
    y[r * y_stride] = hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0[r], acc1[r])));
  }
}

inline constexpr size_t kRowChunk = 64;
inline constexpr size_t kRowTile = 4;

// Output rows [o_begin, o_end) of y (n_rows x n_out) for weights of n_in
// values per row.
template <class Weights>
void MatMulRows(const void* weights, size_t n_in, size_t n_out, size_t o_begin, size_t o_end,
                const float* HWY_RESTRICT x, size_t x_stride, size_t n_rows,
                float* HWY_RESTRICT y) {
  const auto* w = static_cast<const typename Weights::T*>(weights);
  for (size_t r0 = 0; r0 < n_rows; r0 += kRowChunk) {
    const size_t r1 = std::min(n_rows, r0 + kRowChunk);
    for (size_t o = o_begin; o < o_end; ++o) {
      const auto* wrow = w + o * n_in;
      size_t r = r0;
      for (; r + kRowTile <= r1; r += kRowTile) {
        DotTile<Weights, kRowTile>(wrow, n_in, x + r * x_stride, x_stride, y + r * n_out + o, n_out);
      }
      const float* xr = x + r * x_stride;
      float* yr = y + r * n_out + o;
      switch (r1 - r) {
        case 3: DotTile<Weights, 3>(wrow, n_in, xr, x_stride, yr, n_out); break;
        case 2: DotTile<Weights, 2>(wrow, n_in, xr, x_stride, yr, n_out); break;
        case 1: DotTile<Weights, 1>(wrow, n_in, xr, x_stride, yr, n_out); break;
        default: break;
      }
    }
  }
}

}  // namespace fl
}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
