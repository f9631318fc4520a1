// Per-target dot kernels of F32, F16 and BF16 weights against f32
// activations: weights widened to f32 (exactly), products fused into f32
// accumulators, full vector width.
//
// Batch invariance as in simd_matmul_tiles-inl.h: each output uses two
// accumulators (alternate vectors; a ragged tail, zero-padded, goes to the
// second) and one final sum, whatever the tile (2 weight rows x 4
// activation rows, or fewer at the edges).

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

// y[k + r * y_stride] = dot(weight row k, x + r * x_stride) for the W
// weight rows at w (w_stride apart) and R activation rows, over n values.
template <class Weights, size_t W, size_t R>
HWY_INLINE void DotTile(const typename Weights::T* HWY_RESTRICT w, size_t w_stride, size_t n,
                        const float* HWY_RESTRICT x, size_t x_stride, float* HWY_RESTRICT y,
                        size_t y_stride) {
  const DF d;
  const size_t N = hn::Lanes(d);
  VF acc0[W][R];
  VF acc1[W][R];
  HWY_UNROLL(2)
  for (size_t k = 0; k < W; ++k) {
    HWY_UNROLL(4)
    for (size_t r = 0; r < R; ++r) acc0[k][r] = acc1[k][r] = hn::Zero(d);
  }
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    VF w0[W], w1[W];
    HWY_UNROLL(2)
    for (size_t k = 0; k < W; ++k) {
      w0[k] = Weights::Load(w + k * w_stride + i);
      w1[k] = Weights::Load(w + k * w_stride + i + N);
    }
    HWY_UNROLL(4)
    for (size_t r = 0; r < R; ++r) {
      const VF x0 = hn::LoadU(d, x + r * x_stride + i);
      const VF x1 = hn::LoadU(d, x + r * x_stride + i + N);
      HWY_UNROLL(2)
      for (size_t k = 0; k < W; ++k) {
        acc0[k][r] = hn::MulAdd(w0[k], x0, acc0[k][r]);
        acc1[k][r] = hn::MulAdd(w1[k], x1, acc1[k][r]);
      }
    }
  }
  if (i + N <= n) {
    for (size_t k = 0; k < W; ++k) {
      const VF w0 = Weights::Load(w + k * w_stride + i);
      for (size_t r = 0; r < R; ++r) {
        acc0[k][r] = hn::MulAdd(w0, hn::LoadU(d, x + r * x_stride + i), acc0[k][r]);
      }
    }
    i += N;
  }
  if (i < n) {
    // A ragged end: zero-padded copies, into the second accumulator.
    constexpr size_t kMaxLanes = hn::MaxLanes(DF());
    for (size_t k = 0; k < W; ++k) {
      HWY_ALIGN typename Weights::T w_tail[kMaxLanes] = {};
      std::memcpy(w_tail, w + k * w_stride + i, (n - i) * sizeof(w_tail[0]));
      const VF w0 = Weights::Load(w_tail);
      for (size_t r = 0; r < R; ++r) {
        HWY_ALIGN float x_tail[kMaxLanes] = {};
        std::memcpy(x_tail, x + r * x_stride + i, (n - i) * sizeof(float));
        acc1[k][r] = hn::MulAdd(w0, hn::Load(d, x_tail), acc1[k][r]);
      }
    }
  }
  HWY_UNROLL(2)
  for (size_t k = 0; k < W; ++k) {
    HWY_UNROLL(4)
    for (size_t r = 0; r < R; ++r) {
      y[k + r * y_stride] = hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0[k][r], acc1[k][r])));
    }
  }
}

inline constexpr size_t kRowTile = 4;

// W weight rows from `o` against activation rows [r0, r1).
template <class Weights, size_t W>
HWY_INLINE void DotRows(const typename Weights::T* HWY_RESTRICT w, size_t n_in, size_t n_out, size_t o,
                        const float* HWY_RESTRICT x, size_t x_stride, size_t r0, size_t r1,
                        float* HWY_RESTRICT y) {
  const auto* wrow = w + o * n_in;
  size_t r = r0;
  for (; r + kRowTile <= r1; r += kRowTile) {
    DotTile<Weights, W, kRowTile>(wrow, n_in, n_in, x + r * x_stride, x_stride, y + r * n_out + o, n_out);
  }
  const float* xr = x + r * x_stride;
  float* yr = y + r * n_out + o;
  switch (r1 - r) {
    case 3: DotTile<Weights, W, 3>(wrow, n_in, n_in, xr, x_stride, yr, n_out); break;
    case 2: DotTile<Weights, W, 2>(wrow, n_in, n_in, xr, x_stride, yr, n_out); break;
    case 1: DotTile<Weights, W, 1>(wrow, n_in, n_in, xr, x_stride, yr, n_out); break;
    default: break;
  }
}

// Output rows [o_begin, o_end) of y (n_rows x n_out) for weights of n_in
// values per row; activation rows are taken `chunk` at a time, each chunk
// against all the weight rows, two weight rows at a time.
template <class Weights>
void MatMulRows(const void* weights, size_t n_in, size_t n_out, size_t o_begin, size_t o_end,
                const float* HWY_RESTRICT x, size_t x_stride, size_t n_rows, size_t chunk,
                float* HWY_RESTRICT y) {
  const auto* w = static_cast<const typename Weights::T*>(weights);
  for (size_t r0 = 0; r0 < n_rows; r0 += chunk) {
    const size_t r1 = std::min(n_rows, r0 + chunk);
    size_t o = o_begin;
    // A single activation row (decode) streams one weight row at a time:
    // there the weights' bandwidth sets the speed, and one stream measured
    // faster than two interleaved ones.
    if (r1 - r0 > 1) {
      for (; o + 2 <= o_end; o += 2) DotRows<Weights, 2>(w, n_in, n_out, o, x, x_stride, r0, r1, y);
    }
    for (; o < o_end; ++o) DotRows<Weights, 1>(w, n_in, n_out, o, x, x_stride, r0, r1, y);
  }
}

}  // namespace fl
}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
