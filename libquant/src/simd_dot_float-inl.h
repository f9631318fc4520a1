// Per-target dot kernels of F32, F16 and BF16 weights against f32
// activations: weights widened to f32 (exactly), products fused into f32
// accumulators, full vector width.
//
// Batch invariance as in simd_matmul_tiles-inl.h: each output uses kSums
// accumulators (vectors in turn; see DotTile for the tail) and one fixed
// pairwise final sum, whatever the tile (2 weight rows x 4 activation rows,
// or fewer at the edges).

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
#include "stream_prefetch.h"

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
    auto raw = hn::LoadU(hn::Rebind<T, DF>(), p);
#if HWY_TARGET <= HWY_AVX2
    // A plain load, then vcvtph2ps on the register: with the load folded
    // into the conversion, Zen 4 ran the decode loop ~25% slower (weights
    // from L2 or from memory alike).
    asm("" : "+v"(raw.raw));
#endif
    return hn::PromoteTo(DF(), raw);
  }
};
struct WeightsBF16 {
  using T = hwy::bfloat16_t;
  static HWY_INLINE VF Load(const T* HWY_RESTRICT p) {
    return hn::PromoteTo(DF(), hn::LoadU(hn::Rebind<T, DF>(), p));
  }
};

// Independent sums per output: enough that the FMA latency does not bound
// a single weight stream (decode), so the loop can catch up after a stall
// on memory.
inline constexpr size_t kSums = 4;
static_assert((kSums & (kSums - 1)) == 0, "the final pairwise sum halves kSums");

// y[k + r * y_stride] = dot(weight row k, x + r * x_stride) for the W
// weight rows at w (w_stride apart) and R activation rows, over n values.
// Vector j of a row goes to sum j % kSums, except that the whole vectors
// after the last full round go to sums 0, 1, ... and a ragged end
// (zero-padded) to the last sum.
template <class Weights, size_t W, size_t R>
HWY_INLINE void DotTile(const typename Weights::T* HWY_RESTRICT w, size_t w_stride, size_t n,
                        const float* HWY_RESTRICT x, size_t x_stride, float* HWY_RESTRICT y,
                        size_t y_stride) {
  const DF d;
  const size_t N = hn::Lanes(d);
  VF acc[kSums][W][R];
  HWY_UNROLL(4)
  for (size_t s = 0; s < kSums; ++s) {
    HWY_UNROLL(2)
    for (size_t k = 0; k < W; ++k) {
      HWY_UNROLL(4)
      for (size_t r = 0; r < R; ++r) acc[s][k][r] = hn::Zero(d);
    }
  }
  size_t i = 0;
  for (; i + kSums * N <= n; i += kSums * N) {
    // One weight row against one activation row streams the weights.
    if constexpr (W == 1 && R == 1) detail::prefetch_stream<kSums * hn::MaxLanes(DF()) * sizeof(*w)>(w + i);
    HWY_UNROLL(4)
    for (size_t s = 0; s < kSums; ++s) {
      VF wv[W];
      HWY_UNROLL(2)
      for (size_t k = 0; k < W; ++k) wv[k] = Weights::Load(w + k * w_stride + i + s * N);
      HWY_UNROLL(4)
      for (size_t r = 0; r < R; ++r) {
        const VF xv = hn::LoadU(d, x + r * x_stride + i + s * N);
        HWY_UNROLL(2)
        for (size_t k = 0; k < W; ++k) acc[s][k][r] = hn::MulAdd(wv[k], xv, acc[s][k][r]);
      }
    }
  }
  for (size_t s = 0; i + N <= n; i += N, ++s) {
    for (size_t k = 0; k < W; ++k) {
      const VF wv = Weights::Load(w + k * w_stride + i);
      for (size_t r = 0; r < R; ++r) {
        acc[s][k][r] = hn::MulAdd(wv, hn::LoadU(d, x + r * x_stride + i), acc[s][k][r]);
      }
    }
  }
  if (i < n) {
    constexpr size_t kMaxLanes = hn::MaxLanes(DF());
    for (size_t k = 0; k < W; ++k) {
      HWY_ALIGN typename Weights::T w_tail[kMaxLanes] = {};
      std::memcpy(w_tail, w + k * w_stride + i, (n - i) * sizeof(w_tail[0]));
      const VF wv = Weights::Load(w_tail);
      for (size_t r = 0; r < R; ++r) {
        HWY_ALIGN float x_tail[kMaxLanes] = {};
        std::memcpy(x_tail, x + r * x_stride + i, (n - i) * sizeof(float));
        acc[kSums - 1][k][r] = hn::MulAdd(wv, hn::Load(d, x_tail), acc[kSums - 1][k][r]);
      }
    }
  }
  HWY_UNROLL(2)
  for (size_t k = 0; k < W; ++k) {
    HWY_UNROLL(4)
    for (size_t r = 0; r < R; ++r) {
      // Pairwise: (0 + 1) + (2 + 3), and so on.
      VF sums[kSums];
      for (size_t s = 0; s < kSums; ++s) sums[s] = acc[s][k][r];
      for (size_t width = kSums; width > 1; width /= 2) {
        for (size_t s = 0; s < width / 2; ++s) sums[s] = hn::Add(sums[2 * s], sums[2 * s + 1]);
      }
      y[k + r * y_stride] = hn::GetLane(hn::SumOfLanes(d, sums[0]));
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
